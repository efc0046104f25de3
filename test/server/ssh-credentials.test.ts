import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows, walkPages } from '../support/paging.js';
import { createBotWithKey } from '../support/principals.js';
import { idPattern, RFC3339_UTC, startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let dir: string;
beforeAll(async () => {
  t = await startTestServer();
  dir = mkdtempSync(join(tmpdir(), 'edgeward-ssh-keys-'));
});
afterAll(async () => {
  await t.stop();
  rmSync(dir, { recursive: true, force: true });
});

const SSH_CREDENTIAL_FIELDS = [
  'acl',
  'created_at',
  'description',
  'id',
  'metadata',
  'owner_id',
  'public_key',
  'uri',
];

type SshCredential = {
  id: string;
  uri: string;
  created_at: string;
  description: string;
  metadata: string;
  public_key: string;
  acl: string[];
  owner_id: string;
};
type SshCredentialList = { ssh_credentials: SshCredential[]; uri: string; next_page_uri: string | null };

interface KeyFiles {
  /** Path of the private key; the public key is `${path}.pub`. */
  path: string;
  /** The OpenSSH single-line public key, as `ssh-keygen` wrote it. */
  line: string;
  privateKey: string;
  /** `SHA256:...` as `ssh-keygen -l` computes it. */
  fingerprint: string;
}

let keyCount = 0;
/** A real key pair from ssh-keygen. */
function keygen(args: string[], passphrase = ''): KeyFiles {
  const path = join(dir, `key-${++keyCount}`);
  execFileSync('ssh-keygen', [
    '-q',
    ...args,
    '-N',
    passphrase,
    '-C',
    `test-${keyCount}@edgeward`,
    '-f',
    path,
  ]);
  return {
    path,
    line: readFileSync(`${path}.pub`, 'utf8'),
    privateKey: readFileSync(path, 'utf8'),
    fingerprint: sshFingerprint(`${path}.pub`),
  };
}

function sshFingerprint(publicKeyPath: string): string {
  return execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', publicKeyPath], { encoding: 'utf8' }).split(
    ' ',
  )[1] as string;
}

/** `-m PKCS8` gives SPKI (`BEGIN PUBLIC KEY`), `-m PEM` PKCS#1, no mode RFC 4716. */
function exportPublic(key: KeyFiles, mode?: 'PKCS8' | 'PEM'): string {
  const modeArgs = mode ? ['-m', mode] : [];
  return execFileSync('ssh-keygen', ['-e', ...modeArgs, '-f', `${key.path}.pub`], { encoding: 'utf8' });
}

/**
 * ssh-keygen cannot export ed25519 as PEM, so an ed25519 SPKI PEM comes from node:crypto and its
 * OpenSSH line is assembled by hand (RFC 8709 wire format); ssh-keygen reads that line back to
 * give the reference fingerprint.
 */
function ed25519FromNode(): { spki: string; line: string; fingerprint: string } {
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x as string, 'base64url');
  const sshString = (data: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, data.length]), data]);
  const blob = Buffer.concat([sshString(Buffer.from('ssh-ed25519')), sshString(raw)]);
  const line = `ssh-ed25519 ${blob.toString('base64')} node-${++keyCount}@edgeward`;
  const path = join(dir, `node-${keyCount}.pub`);
  writeFileSync(path, `${line}\n`);
  return {
    spki: publicKey.export({ type: 'spki', format: 'pem' }) as string,
    line,
    fingerprint: sshFingerprint(path),
  };
}

async function storedFingerprint(id: string): Promise<string | undefined> {
  const row = await t.server.app.edgeward.db
    .selectFrom('ssh_credentials')
    .select('fingerprint')
    .where('id', '=', id)
    .executeTakeFirst();
  return row?.fingerprint;
}

async function register(publicKey: string, extra: Record<string, unknown> = {}) {
  // Failures carry an error body instead; `msg` is typed so assertions on it read naturally.
  return t.api<SshCredential & { msg?: string }>('POST', '/ssh_credentials', {
    public_key: publicKey,
    ...extra,
  });
}

describe('SSH credentials', () => {
  it('creates, reads, updates, lists and deletes with the wire shape of the spec', async () => {
    const key = keygen(['-t', 'ed25519']);
    const created = await register(key.line, {
      description: 'deploy agent',
      metadata: '{"env":"prod"}',
      acl: ['bind:*.example.com'],
    });
    expect(created.status).toBe(201);
    const credential = created.body;
    expect(Object.keys(credential).sort()).toEqual(SSH_CREDENTIAL_FIELDS);
    expect(credential.id).toMatch(idPattern('sshcr'));
    expect(credential.uri).toBe(`${t.baseUrl}/ssh_credentials/${credential.id}`);
    expect(credential.created_at).toMatch(RFC3339_UTC);
    expect(credential.description).toBe('deploy agent');
    expect(credential.metadata).toBe('{"env":"prod"}');
    // Stored as given, minus the trailing newline ssh-keygen writes.
    expect(key.line.endsWith('\n')).toBe(true);
    expect(credential.public_key).toBe(key.line.trim());
    expect(credential.acl).toEqual(['bind:*.example.com']);
    expect(credential.owner_id).toBe(t.server.bootstrap.adminUserId);
    expect(await storedFingerprint(credential.id)).toBe(key.fingerprint);
    expect(created.text).not.toContain('fingerprint');

    const fetched = await t.api<SshCredential>('GET', `/ssh_credentials/${credential.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toEqual(credential);

    const patched = await t.api<SshCredential>('PATCH', `/ssh_credentials/${credential.id}`, {
      description: 'deploy agent 2',
      metadata: '',
      acl: ['bind:team=prod', 'bind:203.0.113.7:22'],
    });
    expect(patched.status).toBe(200);
    const expected = {
      ...credential,
      description: 'deploy agent 2',
      metadata: '',
      acl: ['bind:team=prod', 'bind:203.0.113.7:22'],
    };
    expect(patched.body).toEqual(expected);
    const kept = await t.api<SshCredential>('PATCH', `/ssh_credentials/${credential.id}`, {});
    expect(kept.body).toEqual(expected);

    const listed = await t.api<SshCredentialList>('GET', '/ssh_credentials');
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.body).sort()).toEqual(['next_page_uri', 'ssh_credentials', 'uri']);
    expect(listed.body.uri).toBe(`${t.baseUrl}/ssh_credentials`);
    expect(listed.body.ssh_credentials).toContainEqual(expected);

    const deleted = await t.api('DELETE', `/ssh_credentials/${credential.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    const gone = await t.api('GET', `/ssh_credentials/${credential.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400', status_code: 404 });
    // The key is free again once its credential is gone.
    expect((await register(key.line)).status).toBe(201);
  });

  it('accepts ed25519, RSA and ECDSA keys in OpenSSH, SPKI, PKCS#1 and RFC 4716 form', async () => {
    const rsa2048 = keygen(['-t', 'rsa', '-b', '2048']);
    const rsa3072 = keygen(['-t', 'rsa', '-b', '3072']);
    const rsaPkcs1 = keygen(['-t', 'rsa', '-b', '2048']);
    const ecdsa256 = keygen(['-t', 'ecdsa', '-b', '256']);
    const ecdsa384 = keygen(['-t', 'ecdsa', '-b', '384']);
    const ecdsa521 = keygen(['-t', 'ecdsa', '-b', '521']);
    const ecdsaPem = keygen(['-t', 'ecdsa', '-b', '256']);
    const ed25519Rfc = keygen(['-t', 'ed25519']);
    const nodeEd25519 = ed25519FromNode();

    const cases: Array<[string, string, string, RegExp]> = [
      ['rsa 2048 OpenSSH line', rsa2048.line, rsa2048.fingerprint, /^ssh-rsa AAAA/],
      ['ecdsa p256 OpenSSH line', ecdsa256.line, ecdsa256.fingerprint, /^ecdsa-sha2-nistp256 /],
      ['ecdsa p384 OpenSSH line', ecdsa384.line, ecdsa384.fingerprint, /^ecdsa-sha2-nistp384 /],
      ['ecdsa p521 OpenSSH line', ecdsa521.line, ecdsa521.fingerprint, /^ecdsa-sha2-nistp521 /],
      ['rsa SPKI PEM', exportPublic(rsa3072, 'PKCS8'), rsa3072.fingerprint, /^-----BEGIN PUBLIC KEY-----\n/],
      [
        'rsa PKCS#1 PEM',
        exportPublic(rsaPkcs1, 'PEM'),
        rsaPkcs1.fingerprint,
        /^-----BEGIN RSA PUBLIC KEY-----\n/,
      ],
      [
        'ecdsa SPKI PEM',
        exportPublic(ecdsaPem, 'PKCS8'),
        ecdsaPem.fingerprint,
        /^-----BEGIN PUBLIC KEY-----/,
      ],
      [
        'ed25519 RFC 4716',
        exportPublic(ed25519Rfc),
        ed25519Rfc.fingerprint,
        /^---- BEGIN SSH2 PUBLIC KEY ----\n/,
      ],
      ['ed25519 SPKI PEM', nodeEd25519.spki, nodeEd25519.fingerprint, /^-----BEGIN PUBLIC KEY-----/],
    ];
    for (const [name, publicKey, fingerprint, shape] of cases) {
      expect(publicKey, name).toMatch(shape);
      const created = await register(`\n  ${publicKey}  \n`);
      expect(created.status, `${name}: ${created.text}`).toBe(201);
      expect(created.body.public_key, name).toBe(publicKey.trim());
      expect(await storedFingerprint(created.body.id), name).toBe(fingerprint);
    }

    // Windows line endings in a pasted PEM are fine too.
    const crlf = exportPublic(keygen(['-t', 'rsa', '-b', '2048']), 'PKCS8').replaceAll('\n', '\r\n');
    const crlfCreated = await register(crlf);
    expect(crlfCreated.status).toBe(201);
    expect(crlfCreated.body.public_key).toBe(crlf.trim());
  });

  it('refuses a key registered before, in whatever format it comes again', async () => {
    const rsa = keygen(['-t', 'rsa', '-b', '2048']);
    const first = await register(rsa.line);
    expect(first.status).toBe(201);
    const message = `public_key: this key is already registered as ssh credential ${first.body.id}`;
    const sameKeyOtherComment = `${rsa.line.trim().split(' ').slice(0, 2).join(' ')} another-comment`;
    for (const [name, again] of [
      ['same line', rsa.line],
      ['other comment', sameKeyOtherComment],
      ['SPKI PEM', exportPublic(rsa, 'PKCS8')],
      ['PKCS#1 PEM', exportPublic(rsa, 'PEM')],
      ['RFC 4716', exportPublic(rsa)],
    ]) {
      const response = await register(again as string, { description: name });
      expect(response.status, name).toBe(409);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_501', status_code: 409, msg: message });
    }

    const ecdsa = keygen(['-t', 'ecdsa', '-b', '384']);
    const ecdsaFirst = await register(exportPublic(ecdsa));
    expect(ecdsaFirst.status).toBe(201);
    const ecdsaAgain = await register(ecdsa.line);
    expect(ecdsaAgain.status).toBe(409);
    expect(ecdsaAgain.body.msg).toBe(
      `public_key: this key is already registered as ssh credential ${ecdsaFirst.body.id}`,
    );

    const ed25519 = ed25519FromNode();
    const edFirst = await register(ed25519.spki);
    expect(edFirst.status).toBe(201);
    const edAgain = await register(ed25519.line);
    expect(edAgain.status).toBe(409);
    expect(edAgain.body.msg).toContain(edFirst.body.id);

    // Once deleted, the key may be registered again, here as PEM.
    expect((await t.api('DELETE', `/ssh_credentials/${first.body.id}`)).status).toBe(204);
    const reRegistered = await register(exportPublic(rsa, 'PKCS8'));
    expect(reRegistered.status).toBe(201);
    expect(await storedFingerprint(reRegistered.body.id)).toBe(rsa.fingerprint);
  });

  it('rejects private keys, naming the field', async () => {
    const openssh = keygen(['-t', 'ed25519']);
    const encrypted = keygen(['-t', 'ecdsa'], 'a passphrase');
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const pem = (key: KeyObject, type: 'pkcs1' | 'pkcs8' | 'sec1', options: object = {}) =>
      key.export({ type, format: 'pem', ...options }) as string;
    const privates: Array<[string, string]> = [
      ['OpenSSH private key', openssh.privateKey],
      ['encrypted OpenSSH private key', encrypted.privateKey],
      ['PKCS#1 RSA private key', pem(rsa.privateKey, 'pkcs1')],
      ['PKCS#8 private key', pem(rsa.privateKey, 'pkcs8')],
      [
        'encrypted PKCS#8 private key',
        pem(rsa.privateKey, 'pkcs8', { cipher: 'aes-256-cbc', passphrase: 'secret' }),
      ],
      ['SEC1 EC private key', pem(ec.privateKey, 'sec1')],
    ];
    expect(openssh.privateKey).toMatch(/^-----BEGIN OPENSSH PRIVATE KEY-----/);
    for (const [name, privateKey] of privates) {
      const response = await register(privateKey);
      expect(response.status, name).toBe(400);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_100', status_code: 400 });
      expect(response.body.msg, name).toBe('public_key: is a private key; send only the public key');
    }
  });

  it('rejects what is not an acceptable public key', async () => {
    const ed25519 = keygen(['-t', 'ed25519']);
    const [type, data] = ed25519.line.trim().split(' ') as [string, string];
    const rsa1024 = keygen(['-t', 'rsa', '-b', '1024']);
    const dsa = generateKeyPairSync('dsa', { modulusLength: 2048, divisorLength: 256 });
    const ca = keygen(['-t', 'ed25519']);
    execFileSync('ssh-keygen', ['-q', '-s', ca.path, '-I', 'test', '-n', 'user', `${ed25519.path}.pub`]);
    const sshCertificate = readFileSync(`${ed25519.path}-cert.pub`, 'utf8');
    const x509 = execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        join(dir, 'x509.key'),
      ].concat(['-subj', '/CN=test', '-days', '1']),
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
    );
    const cases: Array<[string, unknown, string | RegExp]> = [
      ['plain text', 'hello', /^public_key: is not an SSH public key; send an OpenSSH public key line/],
      ['type only', 'ssh-ed25519', /^public_key: is not an SSH public key/],
      ['bad base64', 'ssh-ed25519 !!!notbase64 me', 'public_key: is not a readable OpenSSH public key'],
      ['truncated key', `${type} ${data.slice(0, 40)}`, 'public_key: is not a readable OpenSSH public key'],
      ['type mismatch', `ssh-rsa ${data}`, 'public_key: is not a readable OpenSSH public key'],
      [
        'two keys',
        `${ed25519.line.trim()}\n${rsa1024.line.trim()}`,
        'public_key: must be a single key on a single line',
      ],
      [
        'broken PEM',
        '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----',
        'public_key: is not a readable PEM public key',
      ],
      ['X.509 certificate', x509, 'public_key: is not a readable PEM public key'],
      ['OpenSSH certificate', sshCertificate, /^public_key: is not an SSH public key/],
      ['RSA 1024', rsa1024.line, 'public_key: is a 1024-bit RSA key; RSA keys must have at least 2048 bits'],
      [
        'RSA 1024 as PEM',
        exportPublic(rsa1024, 'PKCS8'),
        'public_key: is a 1024-bit RSA key; RSA keys must have at least 2048 bits',
      ],
      [
        'DSA',
        dsa.publicKey.export({ type: 'spki', format: 'pem' }),
        'public_key: is a dsa key; only ed25519, ecdsa and rsa keys are accepted',
      ],
      ['empty', '', 'public_key: is required'],
      ['blank', ' \n ', 'public_key: is required'],
      ['number', 42, 'public_key: must be a string, got number'],
      ['too long', `ssh-ed25519 ${'A'.repeat(16384)}`, 'public_key: must be at most 16384 bytes'],
    ];
    expect(x509).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(sshCertificate).toMatch(/^ssh-ed25519-cert-v01@openssh.com /);
    for (const [name, publicKey, message] of cases) {
      const response = await t.api('POST', '/ssh_credentials', { public_key: publicKey });
      expect(response.status, name).toBe(400);
      expect(response.body, name).toMatchObject({ error_code: 'ERR_EDGEWARD_100', status_code: 400 });
      if (typeof message === 'string') expect(response.body.msg, name).toBe(message);
      else expect(response.body.msg, name).toMatch(message);
    }
    const missing = await t.api('POST', '/ssh_credentials', { description: 'no key' });
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toBe('public_key: is required');
    // None of the rejected inputs left a row behind.
    expect((await register(ed25519.line)).status).toBe(201);
  });

  it('validates ACL rules on create and update', async () => {
    const key = keygen(['-t', 'ed25519']);
    for (const [rule, reason] of [
      ['connect:x', "only 'bind:<domain|address|label>' rules and '*' are allowed"],
      ['bind:', 'the bind target is empty'],
      ['bind:a.*.example.com', 'the bind target must be'],
      ['bind:example.com:99999', 'the bind target must be'],
      ['bind:=x', 'the bind target must be'],
    ]) {
      const response = await register(key.line, { acl: ['bind:ok.example.com', rule] });
      expect(response.status, rule).toBe(400);
      expect(response.body.msg, rule).toContain(`acl[1]: '${rule}' is not a valid rule; ${reason}`);
    }
    const created = await register(key.line, { acl: ['*'] });
    expect(created.status).toBe(201);
    expect(created.body.acl).toEqual(['*']);
    const good = ['bind:*.example.com', 'bind:tcp.example.com:22', 'bind:*=prod', 'bind:team=*'];
    const patched = await t.api<SshCredential>('PATCH', `/ssh_credentials/${created.body.id}`, { acl: good });
    expect(patched.status).toBe(200);
    expect(patched.body.acl).toEqual(good);
    const bad = await t.api('PATCH', `/ssh_credentials/${created.body.id}`, { acl: ['connect:x'] });
    expect(bad.status).toBe(400);
    expect(bad.body.msg).toMatch(/^acl\[0\]: 'connect:x' is not a valid rule/);
    expect((await t.api<SshCredential>('GET', `/ssh_credentials/${created.body.id}`)).body.acl).toEqual(good);
    const noAcl = await register(keygen(['-t', 'ed25519']).line);
    expect(noAcl.body.acl).toEqual([]);
  });

  it('validates description, metadata, unknown fields, types and immutable fields', async () => {
    const key = keygen(['-t', 'ed25519']);
    const description = await register(key.line, { description: 'é'.repeat(128) });
    expect(description.status).toBe(400);
    expect(description.body.msg).toBe('description: must be at most 255 bytes');
    const metadata = await register(key.line, { metadata: 'x'.repeat(4097) });
    expect(metadata.status).toBe(400);
    expect(metadata.body.msg).toBe('metadata: must be at most 4096 bytes');
    const unknown = await register(key.line, { fingerprint: 'SHA256:x' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.msg).toBe('fingerprint: unknown field');
    const wrongType = await register(key.line, { metadata: { a: 1 } });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.msg).toBe('metadata: must be a string, got object');

    const created = await register(key.line, { description: 'x'.repeat(255), metadata: 'y'.repeat(4096) });
    expect(created.status).toBe(201);
    const other = keygen(['-t', 'ed25519']);
    for (const [field, value] of [
      ['public_key', other.line],
      ['owner_id', created.body.owner_id],
      ['fingerprint', other.fingerprint],
    ]) {
      const patch = await t.api('PATCH', `/ssh_credentials/${created.body.id}`, { [field as string]: value });
      expect(patch.status, field).toBe(400);
      expect(patch.body.msg).toBe(`${field}: unknown field`);
    }
    const tooLong = await t.api('PATCH', `/ssh_credentials/${created.body.id}`, {
      description: 'x'.repeat(256),
    });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.msg).toBe('description: must be at most 255 bytes');
    const unchanged = await t.api<SshCredential>('GET', `/ssh_credentials/${created.body.id}`);
    expect(unchanged.body).toEqual(created.body);
  });

  it('answers 404 for unknown ids on get, patch and delete', async () => {
    const unknown = 'sshcr_0000000000000000000000000';
    for (const method of ['GET', 'PATCH', 'DELETE']) {
      const response = await t.api(
        method,
        `/ssh_credentials/${unknown}`,
        method === 'PATCH' ? {} : undefined,
      );
      expect(response.status, method).toBe(404);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400', status_code: 404 });
      expect(response.body.msg).toBe(`SSH credential with id '${unknown}' not found`);
    }
  });

  it('replays a retried create with the same Idempotency-Key instead of reporting a duplicate key', async () => {
    const key = keygen(['-t', 'ed25519']);
    const headers = { 'idempotency-key': 'ssh-credential-retry-1' };
    const first = await t.api<SshCredential>(
      'POST',
      '/ssh_credentials',
      { public_key: key.line },
      { headers },
    );
    expect(first.status).toBe(201);
    const retry = await t.api<SshCredential>(
      'POST',
      '/ssh_credentials',
      { public_key: key.line },
      { headers },
    );
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toEqual(first.body);
    // Without the key, the same request is a second registration of the same key.
    expect((await register(key.line)).status).toBe(409);
  });

  it('pages newest first across pages through absolute next_page_uri links', async () => {
    const ours: string[] = [];
    for (let i = 0; i < 5; i++) ours.push((await register(ed25519FromNode().line)).body.id);
    const { seen, pages } = await walkPages<SshCredentialList>(
      t,
      '/ssh_credentials?limit=2',
      'ssh_credentials',
      (page, seen) => {
        expect(page.body.ssh_credentials.length).toBeLessThanOrEqual(2);
        const next = page.body.next_page_uri;
        if (next !== null) {
          expect(next.startsWith(`${t.baseUrl}/ssh_credentials?`)).toBe(true);
          expect(new URL(next).searchParams.get('before_id')).toBe(seen.at(-1));
        }
      },
    );
    expect(pages).toBeGreaterThan(2);
    expect(seen.slice(0, 2)).toEqual([ours[4], ours[3]]);
    expect(seen).toEqual([...seen].sort().reverse());
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.filter((id) => ours.includes(id))).toEqual([...ours].reverse());
    expect(seen).toHaveLength(await countRows(t, 'ssh_credentials'));
  });
});

describe('SSH credential owners', () => {
  it('follows the owner rules: caller by default, another owner only for admins, owners must exist', async () => {
    const { botId, key } = await createBotWithKey(t, 'ssh-owner');

    const byAdminForBot = await register(ed25519FromNode().line, { owner_id: botId });
    expect(byAdminForBot.status).toBe(201);
    expect(byAdminForBot.body.owner_id).toBe(botId);

    const byBot = await t.api<SshCredential>(
      'POST',
      '/ssh_credentials',
      { public_key: ed25519FromNode().line },
      { key },
    );
    expect(byBot.status).toBe(201);
    expect(byBot.body.owner_id).toBe(botId);

    const botNamesAdmin = await t.api(
      'POST',
      '/ssh_credentials',
      { public_key: ed25519FromNode().line, owner_id: t.server.bootstrap.adminUserId },
      { key },
    );
    expect(botNamesAdmin.status).toBe(403);
    expect(botNamesAdmin.body).toMatchObject({
      error_code: 'ERR_EDGEWARD_300',
      msg: 'owner_id: only admins may name an owner other than themselves',
    });

    const unknownOwner = await register(ed25519FromNode().line, {
      owner_id: 'bot_0000000000000000000000000',
    });
    expect(unknownOwner.status).toBe(400);
    expect(unknownOwner.body).toMatchObject({
      error_code: 'ERR_EDGEWARD_103',
      msg: "owner_id: no user or bot user with id 'bot_0000000000000000000000000' exists",
    });
  });

  it('a bot sees and changes only its own SSH credentials; others are 404, admins see all', async () => {
    const { botId, key } = await createBotWithKey(t, 'ssh-scoped');
    const asBot = { key };
    const botKey = ed25519FromNode();
    const adminKey = ed25519FromNode();
    const mine = await t.api<SshCredential>('POST', '/ssh_credentials', { public_key: botKey.line }, asBot);
    expect(mine.status).toBe(201);
    const admins = (await register(adminKey.line, { acl: ['bind:admin.example.com'] })).body;

    const listed = await t.api<SshCredentialList>('GET', '/ssh_credentials', undefined, asBot);
    expect(listed.status).toBe(200);
    expect(listed.body.ssh_credentials.map((item) => item.id)).toEqual([mine.body.id]);
    expect(listed.body.ssh_credentials[0]?.owner_id).toBe(botId);

    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { acl: ['*'] }],
      ['DELETE', undefined],
    ] as const) {
      const response = await t.api(method, `/ssh_credentials/${admins.id}`, body, asBot);
      expect(response.status, method).toBe(404);
      expect(response.body).toMatchObject({
        error_code: 'ERR_EDGEWARD_400',
        msg: `SSH credential with id '${admins.id}' not found`,
      });
    }
    expect((await t.api('GET', `/ssh_credentials/${admins.id}`)).body).toEqual(admins);

    // A key registered by someone else is still refused, without naming a credential the bot cannot see.
    const duplicate = await t.api('POST', '/ssh_credentials', { public_key: adminKey.line }, asBot);
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.msg).toBe('public_key: this key is already registered by another owner');
    const ownDuplicate = await t.api('POST', '/ssh_credentials', { public_key: botKey.spki }, asBot);
    expect(ownDuplicate.status).toBe(409);
    expect(ownDuplicate.body.msg).toBe(
      `public_key: this key is already registered as ssh credential ${mine.body.id}`,
    );

    const patched = await t.api<SshCredential>(
      'PATCH',
      `/ssh_credentials/${mine.body.id}`,
      { description: 'renamed' },
      asBot,
    );
    expect(patched.status).toBe(200);
    expect(patched.body.description).toBe('renamed');
    const all = await walkPages<SshCredentialList>(t, '/ssh_credentials', 'ssh_credentials');
    expect(all.seen).toEqual(expect.arrayContaining([mine.body.id, admins.id]));
    expect((await t.api('DELETE', `/ssh_credentials/${mine.body.id}`, undefined, asBot)).status).toBe(204);
  });
});
