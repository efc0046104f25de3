import { isIP } from 'node:net';
import { z } from 'zod';
import { describedInputFields, describedResourceFields, listOf, resourceId, timestamp } from './common.js';
import { cidrProblem } from './ip-policies.js';
import { sshKeyType } from './ssh-certificate-authorities.js';
import { PUBLIC_KEY_MAX_BYTES } from './ssh-credentials.js';

/** OpenSSH refuses certificates with more principals than this (SSHKEY_CERT_MAX_PRINCIPALS). */
export const MAX_PRINCIPALS = 256;
const MAX_NAME_BYTES = 255;
const MAX_OPTION_VALUE_BYTES = 4096;
const MAX_EXTENSIONS = 64;

const byteLength = (s: string) => Buffer.byteLength(s, 'utf8');
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
const CONTROL = /[\u0000-\u001f\u007f]/;

/** The two critical options OpenSSH defines; it refuses a certificate with one it does not know. */
export const SSH_CRITICAL_OPTIONS = ['force-command', 'source-address'] as const;

/** The extensions OpenSSH defines: all are flags, so their value is the empty string. */
export const SSH_FLAG_EXTENSIONS = [
  'no-touch-required',
  'permit-X11-forwarding',
  'permit-agent-forwarding',
  'permit-port-forwarding',
  'permit-pty',
  'permit-user-rc',
] as const;

/** What a user certificate allows when the request does not say: a terminal and ~/.ssh/rc. */
export const DEFAULT_SSH_USER_EXTENSIONS: Readonly<Record<string, string>> = {
  'permit-pty': '',
  'permit-user-rc': '',
};

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$/;

/**
 * The instant an RFC 3339 date-time names, at whole-second precision (a certificate counts whole
 * seconds, so a fraction is dropped), or undefined when `value` is not one. Checked field by field
 * because `Date.parse` accepts other formats and rolls 2030-02-30 over into March.
 */
export function parseRfc3339(value: string): Date | undefined {
  const match = RFC3339.exec(value);
  if (!match) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  // Leap seconds (:60) are refused: POSIX time, which certificates use, has none.
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (match[9] !== undefined) {
    const offsetHours = Number(match[9]);
    const offsetMins = Number(match[10]);
    if (offsetHours > 23 || offsetMins > 59) return undefined;
    offsetMinutes = (match[8]?.startsWith('-') ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  const utc = new Date(0);
  utc.setUTCFullYear(year, month - 1, day); // setUTCFullYear keeps years 0..99 as written
  utc.setUTCHours(hour, minute - offsetMinutes, second, 0);
  return utc;
}

/** Why `value` cannot be a certificate time, or undefined when it can. */
export function rfc3339Problem(value: string): string | undefined {
  const date = parseRfc3339(value);
  if (!date) return 'must be an RFC 3339 date-time such as 2030-01-31T12:00:00Z';
  if (date.getTime() < 0) return 'must not be before 1970-01-01T00:00:00Z';
  return undefined;
}

export const rfc3339DateTime = z
  .string()
  .superRefine((value, ctx) => {
    const problem = rfc3339Problem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .meta({ format: 'date-time' });

export const sshPrincipals = z
  .array(
    z
      .string()
      .min(1, 'must not be empty')
      .refine((s) => byteLength(s) <= MAX_NAME_BYTES, `must be at most ${MAX_NAME_BYTES} bytes`)
      .refine((s) => !CONTROL.test(s), 'must not contain control characters')
      .meta({ pattern: '^[^\\x00-\\x1f\\x7f]+$' }),
  )
  .max(MAX_PRINCIPALS, `must have at most ${MAX_PRINCIPALS} entries`)
  .superRefine((principals, ctx) => {
    principals.forEach((principal, index) => {
      const first = principals.indexOf(principal);
      if (first !== index) {
        ctx.addIssue({ code: 'custom', path: [index], message: `duplicates principals[${first}]` });
      }
    });
  })
  .meta({ uniqueItems: true });

/** Why a `source-address` value is bad: OpenSSH wants comma-separated addresses or CIDRs, no spaces. */
export function sourceAddressProblem(value: string): string | undefined {
  const entries = value.split(',');
  for (const entry of entries) {
    if (entry === '') return 'must be a comma-separated list of IP addresses or CIDRs, with no empty entries';
    if (entry.includes('/')) {
      const problem = cidrProblem(entry);
      if (problem) return `'${entry}' ${problem}`;
    } else if (isIP(entry) === 0 || entry.includes('%')) {
      return `'${entry}' is not an IP address or CIDR`;
    }
  }
  return undefined;
}

export const sshCriticalOptions = z
  .record(z.string(), z.string())
  .superRefine((options, ctx) => {
    for (const [name, value] of Object.entries(options)) {
      const at = { code: 'custom' as const, path: [name] };
      if (!(SSH_CRITICAL_OPTIONS as readonly string[]).includes(name)) {
        ctx.addIssue({
          ...at,
          message: `is not a critical option; OpenSSH defines only ${SSH_CRITICAL_OPTIONS.join(' and ')}`,
        });
      } else if (value === '') {
        ctx.addIssue({ ...at, message: 'must not be empty' });
      } else if (byteLength(value) > MAX_OPTION_VALUE_BYTES) {
        ctx.addIssue({ ...at, message: `must be at most ${MAX_OPTION_VALUE_BYTES} bytes` });
      } else if (name === 'source-address') {
        const problem = sourceAddressProblem(value);
        if (problem) ctx.addIssue({ ...at, message: problem });
      }
    }
  })
  .meta({
    propertyNames: { enum: [...SSH_CRITICAL_OPTIONS] },
    properties: {
      'force-command': { type: 'string', minLength: 1 },
      'source-address': { type: 'string', format: 'edgeward-source-address' },
    },
  });

export const sshExtensions = z
  .record(z.string(), z.string())
  .superRefine((extensions, ctx) => {
    const names = Object.keys(extensions);
    if (names.length > MAX_EXTENSIONS) {
      ctx.addIssue({ code: 'custom', message: `must have at most ${MAX_EXTENSIONS} entries` });
      return;
    }
    for (const [name, value] of Object.entries(extensions)) {
      const at = { code: 'custom' as const, path: [name] };
      const isFlag = (SSH_FLAG_EXTENSIONS as readonly string[]).includes(name);
      // PROTOCOL.certkeys: names other than OpenSSH's own take the vendor form name@domain.
      const isVendor = /^[\x21-\x3f\x41-\x7e]+@[\x21-\x3f\x41-\x7e]+$/.test(name);
      if (!isFlag && !isVendor) {
        ctx.addIssue({
          ...at,
          message: `is not an extension OpenSSH defines (${SSH_FLAG_EXTENSIONS.join(', ')}) nor a vendor extension of the form name@domain`,
        });
      } else if (isVendor && byteLength(name) > MAX_NAME_BYTES) {
        ctx.addIssue({ ...at, message: `name must be at most ${MAX_NAME_BYTES} bytes` });
      } else if (isFlag && value !== '') {
        ctx.addIssue({ ...at, message: 'is a flag; its value must be the empty string' });
      } else if (byteLength(value) > MAX_OPTION_VALUE_BYTES) {
        ctx.addIssue({ ...at, message: `must be at most ${MAX_OPTION_VALUE_BYTES} bytes` });
      }
    }
  })
  .meta({
    maxProperties: MAX_EXTENSIONS,
    propertyNames: {
      pattern: `^(${SSH_FLAG_EXTENSIONS.join('|')}|[\\x21-\\x3f\\x41-\\x7e]+@[\\x21-\\x3f\\x41-\\x7e]+)$`,
      maxLength: MAX_NAME_BYTES,
    },
    // OpenSSH's own extensions are flags: their value is the empty string.
    properties: Object.fromEntries(SSH_FLAG_EXTENSIONS.map((name) => [name, { const: '' }])),
  });

const certificatePublicKey = z
  .string()
  .refine((s) => s.trim().length > 0, 'is required')
  .refine((s) => byteLength(s) <= PUBLIC_KEY_MAX_BYTES, `must be at most ${PUBLIC_KEY_MAX_BYTES} bytes`)
  .meta({
    format: 'ssh-public-key',
    description:
      'public key to certify, as an OpenSSH authorized_keys line: ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa of at least 2048 bits',
  });

const sshHostCertificateFields = {
  ...describedResourceFields,
  ssh_certificate_authority_id: z.string(),
  public_key: z.string(),
  key_type: sshKeyType,
  principals: z.array(z.string()),
  valid_after: timestamp,
  valid_until: timestamp,
  certificate: z.string().meta({
    description: 'the signed OpenSSH certificate as an authorized_keys line, for a -cert.pub file',
  }),
};

export const sshHostCertificate = z.object(sshHostCertificateFields).meta({ id: 'SSHHostCertificate' });
export type SshHostCertificate = z.infer<typeof sshHostCertificate>;

export const sshUserCertificate = z
  .object({
    ...sshHostCertificateFields,
    critical_options: z.record(z.string(), z.string()),
    extensions: z.record(z.string(), z.string()),
  })
  .meta({ id: 'SSHUserCertificate' });
export type SshUserCertificate = z.infer<typeof sshUserCertificate>;

const certificateCreateFields = {
  ...describedInputFields,
  ssh_certificate_authority_id: resourceId('sshca'),
  public_key: certificatePublicKey,
  principals: sshPrincipals
    .optional()
    .meta({ description: 'names the certificate is valid for; empty or omitted means any' }),
  valid_after: rfc3339DateTime.optional().meta({ description: 'RFC 3339; default now' }),
};

export const sshHostCertificateCreate = z.strictObject({
  ...certificateCreateFields,
  valid_until: rfc3339DateTime.optional().meta({ description: 'RFC 3339; default one year after creation' }),
});
export type SshHostCertificateCreate = z.input<typeof sshHostCertificateCreate>;

export const sshUserCertificateCreate = z.strictObject({
  ...certificateCreateFields,
  valid_until: rfc3339DateTime.optional().meta({ description: 'RFC 3339; default 24 hours after creation' }),
  critical_options: sshCriticalOptions
    .optional()
    .meta({ description: 'force-command and/or source-address (comma-separated IPs or CIDRs)' }),
  extensions: sshExtensions.optional().meta({
    description: 'default {"permit-pty": "", "permit-user-rc": ""}; {} grants none',
  }),
});
export type SshUserCertificateCreate = z.input<typeof sshUserCertificateCreate>;

// A certificate is signed once: only the description and metadata of the resource can change.
export const sshHostCertificateUpdate = z.strictObject(describedInputFields);
export type SshHostCertificateUpdate = z.input<typeof sshHostCertificateUpdate>;
export const sshUserCertificateUpdate = z.strictObject(describedInputFields);
export type SshUserCertificateUpdate = z.input<typeof sshUserCertificateUpdate>;

export const sshHostCertificateList = listOf('ssh_host_certificates', sshHostCertificate);
export type SshHostCertificateList = z.infer<typeof sshHostCertificateList>;
export const sshUserCertificateList = listOf('ssh_user_certificates', sshUserCertificate);
export type SshUserCertificateList = z.infer<typeof sshUserCertificateList>;
