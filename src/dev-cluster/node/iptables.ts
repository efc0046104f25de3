import { spawnSync } from 'node:child_process';

/** Splits an iptables-save rule line into arguments (double-quoted words as one). */
export function splitRule(line: string): string[] {
  const args: string[] = [];
  for (const match of line.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)) {
    args.push(match[1] !== undefined ? match[1].replace(/\\(.)/g, '$1') : (match[2] as string));
  }
  return args;
}

/** Whether the host's iptables has chains of a Kubernetes node (KUBE-*). */
export function hasKubeChains(): boolean {
  const saved = spawnSync('iptables-save', ['-t', 'filter'], { encoding: 'utf8' });
  return saved.status === 0 && /^:KUBE-/m.test(saved.stdout);
}

/**
 * Removes the KUBE-* chains the kubelet and kube-proxy make (KUBE-FIREWALL and its DROP of
 * 127.0.0.0/8 from other sources among them), and the jumps into them from the built-in chains,
 * in iptables and ip6tables. Returns what could not be removed.
 */
export function removeKubeChains(): string[] {
  const problems: string[] = [];
  for (const binary of ['iptables', 'ip6tables']) {
    for (const table of ['filter', 'nat', 'mangle']) {
      const saved = spawnSync(`${binary}-save`, ['-t', table], { encoding: 'utf8' });
      if (saved.status !== 0) continue;
      const lines = saved.stdout.split('\n');
      const jumps = lines.filter((line) => line.startsWith('-A ') && /(^|\s)-[jg] KUBE-/.test(line));
      const chains = lines
        .filter((line) => line.startsWith(':KUBE-'))
        .map((line) => line.slice(1).split(' ')[0] as string);
      const run = (args: string[]) => {
        const result = spawnSync(binary, ['-w', '-t', table, ...args], { encoding: 'utf8' });
        if (result.status !== 0)
          problems.push(`${binary} -t ${table} ${args.join(' ')}: ${result.stderr.trim()}`);
      };
      for (const jump of jumps) run(['-D', ...splitRule(jump).slice(1)]);
      for (const chain of chains) run(['-F', chain]);
      for (const chain of chains) run(['-X', chain]);
    }
  }
  return problems;
}
