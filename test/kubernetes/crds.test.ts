import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { tool } from '../support/kubectl.js';

/**
 * The generated CRDs on a real kube-apiserver: they install, every kind accepts a realistic object,
 * and each schema limit and CEL rule refuses bad input with its own message — what a user running
 * `kubectl apply` sees before the operator is involved at all.
 */

const CRDS_DIR = fileURLToPath(new URL('../../crds/', import.meta.url));
const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const namespace = `edgeward-crds-${randomBytes(3).toString('hex')}`;
let kubeconfig: string;

const kubectl = (args: string[], input?: string) => tool(inject('kubectl'), kubeconfig, args, input);

type Spec = Record<string, unknown>;
type Resource = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string };
  spec?: Spec;
};

let counter = 0;
function resource(
  kind: string,
  spec: Spec | undefined,
  name = `${kind.toLowerCase()}-${++counter}`,
): Resource {
  return {
    apiVersion: 'edgeward.dev/v1alpha1',
    kind,
    metadata: { name, namespace },
    ...(spec === undefined ? {} : { spec }),
  };
}

/** Server-side dry-run create (or update): validated and defaulted by the apiserver, not stored. */
async function dryRun(object: Resource): Promise<Resource & { spec: Spec }> {
  const { stdout } = await kubectl(
    ['apply', '--dry-run=server', '-o', 'json', '-f', '-'],
    JSON.stringify(object),
  );
  return JSON.parse(stdout) as Resource & { spec: Spec };
}

/** The apiserver's refusal of an object; fails the test when the object is accepted. */
async function rejection(object: Resource): Promise<string> {
  try {
    await dryRun(object);
  } catch (error) {
    return (error as Error).message;
  }
  return expect.fail(`the apiserver accepted ${JSON.stringify(object.spec)}`);
}

const PEM = [
  '-----BEGIN CERTIFICATE-----',
  'MIIBszCCAVmgAwIBAgIUQ2VydGlmaWNhdGUgYm9keSBpcyBub3QgcGFyc2VkIGhlcmU=',
  '-----END CERTIFICATE-----',
  '',
].join('\n');
const PUBLIC_KEY =
  'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE2hTJzZYrXhCZVdEaI0bXbRD7ogPw5ZQf7PZ1k5eZ7h alice@example';
const SECRET = { name: 'edge-secrets', key: 'value' };
const ROLE = { role: { roleArn: 'arn:aws:iam::123456789012:role/edgeward-events' } };
const STREAM_ARN = 'arn:aws:kinesis:eu-west-1:123456789012:stream/edgeward';
const POLICY = {
  inbound: [
    {
      name: 'deny-bots',
      expressions: ["req.headers['user-agent'].exists(ua, ua.contains('bot'))"],
      actions: [{ type: 'custom-response', config: { status_code: 403, headers: { 'x-why': ['bots'] } } }],
    },
  ],
  outbound: [{ name: 'log', actions: [{ type: 'log' }] }],
};

/** A realistic object of every kind, using most of its fields. */
const GOOD: Record<string, Spec | undefined> = {
  AgentIngress: {
    description: 'agents of the eu fleet',
    metadata: '{"team":"edge"}',
    domain: 'agents.example.com',
    certificateManagementPolicy: { authority: 'letsencrypt', privateKeyType: 'ecdsa' },
  },
  SSHCertificateAuthority: { keyType: 'ecdsa', ellipticCurve: 'p384', description: 'hosts CA' },
  SSHHostCertificate: {
    sshCertificateAuthorityRef: { name: 'hosts-ca' },
    publicKey: PUBLIC_KEY,
    principals: ['host.example.com', '10.0.0.1'],
    validAfter: '2030-01-01T00:00:00Z',
    validUntil: '2031-01-01T00:00:00Z',
    certificateSecretName: 'host-certificate',
  },
  SSHUserCertificate: {
    sshCertificateAuthorityId: 'sshca_2abcdefghijklmnopqrstuvwxyz',
    publicKey: PUBLIC_KEY,
    principals: ['alice'],
    criticalOptions: { forceCommand: '/usr/bin/rsync --server', sourceAddress: '10.0.0.0/8,192.0.2.7' },
    extensions: { 'permit-pty': '', 'login@example.com': 'alice' },
    validUntil: '2030-01-02T00:00:00Z',
  },
  SSHCredential: { publicKey: PUBLIC_KEY, acl: ['bind:*.example.com'], ownerRef: { name: 'ci-bot' } },
  TunnelCredential: {
    description: 'eu agents',
    acl: ['bind:app.example.com', 'bind:region=eu', '*'],
    ownerId: 'bot_2abcdefghijklmnopqrstuvwxyz',
    tokenSecretName: 'agent-token',
  },
  TLSEdge: {
    hostports: ['app.example.com:443', 'app.example.net:8443'],
    backend: { labels: { app: 'web', 'edgeward.dev/region': 'eu' } },
    ipRestriction: { ipPolicyRefs: [{ name: 'office' }, { name: 'vpn' }] },
    mutualTls: { certificateAuthorityIds: ['ca_2abcdefghijklmnopqrstuvwxyz'] },
    tlsTermination: { terminateAt: 'upstream' },
    policy: POLICY,
  },
  HTTPSEdge: {
    hostports: ['www.example.com:443'],
    mutualTls: { enabled: false, certificateAuthorityRefs: [{ name: 'clients' }] },
    tlsTermination: { minVersion: '1.3' },
  },
  HTTPSEdgeRoute: {
    edgeRef: { name: 'www' },
    matchType: 'path_prefix',
    match: '/api',
    backend: { backendId: 'bkdtg_2abcdefghijklmnopqrstuvwxyz' },
    ipRestriction: { ipPolicyIds: ['ipp_2abcdefghijklmnopqrstuvwxyz'] },
    circuitBreaker: {
      trippedDuration: 30,
      rollingWindow: 60,
      numBuckets: 128,
      volumeThreshold: 50,
      errorThresholdPercentage: 0.25,
    },
    compression: {},
    requestHeaders: { add: { 'x-edge': 'edgeward' }, remove: ['cookie'] },
    responseHeaders: { add: { 'strict-transport-security': 'max-age=63072000' }, remove: ['server'] },
    webhookVerification: { provider: 'github', secretRef: SECRET },
    oauth: {
      provider: {
        github: {
          clientId: 'Iv1.0123456789abcdef',
          clientSecretRef: SECRET,
          scopes: ['read:org'],
          emailDomains: ['example.com'],
          teams: ['acme/platform'],
          organizations: ['acme'],
        },
      },
      cookiePrefix: 'edgeward.',
      authCheckInterval: 300,
    },
    saml: {
      idpMetadata: '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="idp"/>',
      nameidFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
      authorizedGroups: ['engineering'],
      forceAuthn: true,
    },
    oidc: {
      issuer: 'https://accounts.example.com',
      clientId: 'edgeward',
      clientSecretRef: SECRET,
      scopes: ['email'],
    },
    websocketTcpConverter: { enabled: false },
    userAgentFilter: { allow: ['^curl/'], deny: ['(?i)bot'] },
    policy: POLICY,
  },
  TCPEdge: {
    hostports: ['eu.tcp.edgeward.dev:23456'],
    backend: { labels: { app: 'ssh' } },
    ipRestriction: { ipPolicyRefs: [{ name: 'office' }] },
    policy: POLICY,
  },
  IPPolicy: {
    description: 'office networks',
    rules: [
      { cidr: '203.0.113.0/24', action: 'allow', description: 'office' },
      { cidr: '2001:db8::/32', action: 'deny' },
      { cidr: '0.0.0.0/0', action: 'deny' },
    ],
  },
  ReservedAddress: { region: 'eu', description: 'ssh of the eu fleet' },
  BotUser: { name: 'CI bot', active: false },
  CertificateAuthority: { caPem: PEM, description: 'client certificates' },
  TLSCertificate: { certificatePem: PEM, privateKeySecretRef: { name: 'www-tls', key: 'tls.key' } },
  EventSubscription: {
    sources: [{ type: 'ip_policy_created.v0' }, { type: 'tls_edge_updated.v0' }],
    destinationRefs: [{ name: 'audit' }],
  },
  EventDestination: { format: 'json', target: { kinesis: { auth: ROLE, streamArn: STREAM_ARN } } },
};

/** Other good shapes, next to the rules that could refuse them by mistake. */
const ALSO_GOOD: Array<[string, string, Spec | undefined]> = [
  ['a bare IPPolicy (spec defaults to {})', 'IPPolicy', undefined],
  ['a TLSCertificate from a kubernetes.io/tls Secret', 'TLSCertificate', { secretRef: { name: 'www-tls' } }],
  [
    'an sns webhook without a secret',
    'HTTPSEdgeRoute',
    { ...routeBase(), webhookVerification: { provider: 'sns' } },
  ],
  [
    'OAuth with the managed app (no client, no scopes)',
    'HTTPSEdgeRoute',
    oauthRoute({ emailAddresses: ['a@example.com'] }),
  ],
  ['an rsa SSH CA with a key size', 'SSHCertificateAuthority', { keyType: 'rsa', keySize: 4096 }],
  ['TLS terminated at the edge with a minimum version', 'TLSEdge', { tlsTermination: { minVersion: '1.2' } }],
  [
    'a Datadog destination with an API key from a Secret',
    'EventDestination',
    { target: { datadog: { apiKeySecretRef: SECRET, ddsite: 'datadoghq.eu', service: 'edge' } } },
  ],
  [
    'a Firehose destination with access keys',
    'EventDestination',
    {
      target: {
        firehose: {
          auth: { creds: { awsAccessKeyId: 'AKIAIOSFODNN7EXAMPLE', awsSecretAccessKeyRef: SECRET } },
          deliveryStreamArn: 'arn:aws:firehose:us-east-1:123456789012:deliverystream/edgeward',
        },
      },
    },
  ],
  [
    'an event subscription by destination ids',
    'EventSubscription',
    { destinationIds: ['ed_2abcdefghijklmnop'] },
  ],
];

function routeBase(): Spec {
  return { edgeRef: { name: 'www' }, matchType: 'exact_path', match: '/' };
}
function oauthRoute(github: Spec): Spec {
  return { ...routeBase(), oauth: { provider: { github } } };
}
const withSpec = (kind: string, changes: Spec): Spec => ({ ...GOOD[kind], ...changes });

/** One problem per object: the apiserver skips CEL rules once the schema already failed. */
const BAD: Array<[string, string, Spec, string]> = [
  // A TLSCertificate takes its certificate inline or from a Secret: one of the two.
  [
    'a TLSCertificate both inline and from a Secret',
    'TLSCertificate',
    { ...GOOD.TLSCertificate, secretRef: { name: 'www-tls' } },
    'spec: Invalid value: exactly one of secretRef (a kubernetes.io/tls Secret) or certificatePem (with privateKeySecretRef) must be set',
  ],
  [
    'a TLSCertificate with neither',
    'TLSCertificate',
    { description: 'nothing' },
    'spec: Invalid value: exactly one of secretRef (a kubernetes.io/tls Secret) or certificatePem (with privateKeySecretRef) must be set',
  ],
  [
    'a TLSCertificate from a Secret with a private key ref',
    'TLSCertificate',
    { secretRef: { name: 'www-tls' }, privateKeySecretRef: { name: 'www-tls', key: 'tls.key' } },
    'spec.privateKeySecretRef: Required value: certificatePem and privateKeySecretRef go together',
  ],
  // Exactly one event target, exactly one AWS auth.
  [
    'a destination without a target member',
    'EventDestination',
    { target: {} },
    'spec.target: Invalid value: exactly one of kinesis, firehose, cloudwatchLogs, datadog must be set',
  ],
  [
    'a destination with two target members',
    'EventDestination',
    {
      target: {
        kinesis: { auth: ROLE, streamArn: STREAM_ARN },
        datadog: { apiKeySecretRef: SECRET },
      },
    },
    'exactly one of kinesis, firehose, cloudwatchLogs, datadog must be set',
  ],
  [
    'AWS auth with both role and creds',
    'EventDestination',
    {
      target: {
        kinesis: {
          auth: { ...ROLE, creds: { awsAccessKeyId: 'AKIAIOSFODNN7EXAMPLE', awsSecretAccessKeyRef: SECRET } },
          streamArn: STREAM_ARN,
        },
      },
    },
    'spec.target.kinesis.auth: Invalid value: exactly one of role or creds must be set',
  ],
  [
    'AWS auth with neither role nor creds',
    'EventDestination',
    {
      target: {
        cloudwatchLogs: { auth: {}, logGroupArn: 'arn:aws:logs:eu-west-1:123456789012:log-group:edge' },
      },
    },
    'exactly one of role or creds must be set',
  ],
  // OAuth: scopes need your own app; client id and secret come together; one provider.
  [
    'OAuth scopes without a client id and secret',
    'HTTPSEdgeRoute',
    oauthRoute({ scopes: ['read:org'] }),
    'spec.oauth.provider.github.scopes: Invalid value: scopes require both clientId and clientSecretRef',
  ],
  [
    'an OAuth client id without its secret',
    'HTTPSEdgeRoute',
    oauthRoute({ clientId: 'Iv1.0123' }),
    'clientId requires clientSecretRef',
  ],
  [
    'an OAuth client secret without its id',
    'HTTPSEdgeRoute',
    oauthRoute({ clientSecretRef: SECRET }),
    'clientSecretRef requires clientId',
  ],
  [
    'two OAuth providers',
    'HTTPSEdgeRoute',
    { ...routeBase(), oauth: { provider: { github: {}, google: {} } } },
    'spec.oauth.provider: Invalid value: exactly one of github, facebook, microsoft, google, linkedin, gitlab, twitch, amazon must be set',
  ],
  [
    'an inline OAuth client secret (secrets come from Secrets only)',
    'HTTPSEdgeRoute',
    oauthRoute({ clientId: 'Iv1.0123', clientSecret: 'hunter2' }),
    'unknown field "spec.oauth.provider.github.clientSecret"',
  ],
  [
    'a webhook without a secret for a provider that needs one',
    'HTTPSEdgeRoute',
    { ...routeBase(), webhookVerification: { provider: 'stripe' } },
    'spec.webhookVerification.secretRef: Invalid value: secretRef is required unless provider is sns',
  ],
  // TLS termination.
  [
    'a minimum TLS version when passing TLS through',
    'TLSEdge',
    { tlsTermination: { terminateAt: 'upstream', minVersion: '1.2' } },
    'spec.tlsTermination.minVersion: Invalid value: minVersion must be unset when terminateAt is upstream',
  ],
  // A reference by name or a server id, not both (and not neither where one is needed).
  [
    'both ipPolicyRefs and ipPolicyIds',
    'TLSEdge',
    { ipRestriction: { ipPolicyRefs: [{ name: 'office' }], ipPolicyIds: ['ipp_2abc'] } },
    'spec.ipRestriction: Invalid value: exactly one of ipPolicyRefs or ipPolicyIds must be set',
  ],
  [
    'an IP restriction without policies',
    'TCPEdge',
    { ipRestriction: {} },
    'exactly one of ipPolicyRefs or ipPolicyIds must be set',
  ],
  [
    'both certificateAuthorityRefs and certificateAuthorityIds',
    'HTTPSEdge',
    { mutualTls: { certificateAuthorityRefs: [{ name: 'clients' }], certificateAuthorityIds: ['ca_2abc'] } },
    'exactly one of certificateAuthorityRefs or certificateAuthorityIds must be set',
  ],
  [
    'a backend with both labels and a backend id',
    'TLSEdge',
    { backend: { labels: { app: 'web' }, backendId: 'bkdtg_2abc' } },
    'spec.backend: Invalid value: exactly one of labels or backendId must be set',
  ],
  [
    'a route with both edgeRef and edgeId',
    'HTTPSEdgeRoute',
    { ...routeBase(), edgeId: 'edghts_2abc' },
    'exactly one of edgeRef or edgeId must be set',
  ],
  [
    'a route without an edge',
    'HTTPSEdgeRoute',
    { matchType: 'exact_path', match: '/' },
    'exactly one of edgeRef or edgeId must be set',
  ],
  [
    'an SSH certificate with both a CA reference and a CA id',
    'SSHHostCertificate',
    withSpec('SSHHostCertificate', { sshCertificateAuthorityId: 'sshca_2abc' }),
    'exactly one of sshCertificateAuthorityRef or sshCertificateAuthorityId must be set',
  ],
  [
    'a credential with both ownerRef and ownerId',
    'TunnelCredential',
    { ownerRef: { name: 'ci-bot' }, ownerId: 'bot_2abc' },
    'ownerRef and ownerId are mutually exclusive',
  ],
  [
    'both destinationRefs and destinationIds',
    'EventSubscription',
    { destinationRefs: [{ name: 'audit' }], destinationIds: ['ed_2abc'] },
    'destinationRefs and destinationIds are mutually exclusive',
  ],
  // SSH CA key parameters.
  [
    'an elliptic curve for an ed25519 CA',
    'SSHCertificateAuthority',
    { ellipticCurve: 'p256' },
    'spec.ellipticCurve: Invalid value: ellipticCurve only applies when keyType is ecdsa',
  ],
  [
    'a key size for an ecdsa CA',
    'SSHCertificateAuthority',
    { keyType: 'ecdsa', keySize: 2048 },
    'keySize only applies when keyType is rsa',
  ],
  // IP policy rules.
  [
    'a rule that is not a CIDR',
    'IPPolicy',
    { rules: [{ cidr: '10.0.0.1', action: 'allow' }] },
    'spec.rules[0].cidr: Invalid value: cidr must be an IP network in CIDR notation',
  ],
  [
    'a rule with host bits set',
    'IPPolicy',
    { rules: [{ cidr: '10.1.2.3/8', action: 'deny' }] },
    'cidr must be a network address, without host bits set',
  ],
  [
    'the same network twice',
    'IPPolicy',
    {
      rules: [
        { cidr: '10.0.0.0/8', action: 'allow' },
        { cidr: '10.0.0.0/8', action: 'deny' },
      ],
    },
    'spec.rules[1]: Duplicate value: {"cidr":"10.0.0.0/8"}',
  ],
  // Limits of the management API, as schema limits.
  [
    'more than 128 circuit breaker buckets',
    'HTTPSEdgeRoute',
    { ...routeBase(), circuitBreaker: { numBuckets: 129 } },
    'spec.circuitBreaker.numBuckets in body should be less than or equal to 128',
  ],
  [
    'an error threshold above 1.0 (a fraction, not a percentage)',
    'HTTPSEdgeRoute',
    { ...routeBase(), circuitBreaker: { errorThresholdPercentage: 50 } },
    'spec.circuitBreaker.errorThresholdPercentage in body should be less than or equal to 1',
  ],
  [
    'a negative error threshold',
    'HTTPSEdgeRoute',
    { ...routeBase(), circuitBreaker: { errorThresholdPercentage: -0.1 } },
    'spec.circuitBreaker.errorThresholdPercentage in body should be greater than or equal to 0',
  ],
  [
    'a description over 255 characters',
    'IPPolicy',
    { description: 'd'.repeat(256) },
    'spec.description: Too long: may not be more than 255',
  ],
  [
    'metadata over 4096 characters',
    'ReservedAddress',
    { metadata: 'm'.repeat(4097) },
    'spec.metadata: Too long: may not be more than 4096',
  ],
  ['an unknown region', 'ReservedAddress', { region: 'mars' }, 'spec.region: Unsupported value: "mars"'],
  [
    'an unknown route match type',
    'HTTPSEdgeRoute',
    { ...routeBase(), matchType: 'prefix' },
    'spec.matchType: Unsupported value: "prefix"',
  ],
  [
    'an unknown deletion policy',
    'BotUser',
    { deletionPolicy: 'Retain' },
    'spec.deletionPolicy: Unsupported value: "Retain"',
  ],
];

/** [kind, field, the spec it is created with, the change that must be refused]. */
const IMMUTABLE: Array<[string, string, Spec, Spec]> = [
  ['ReservedAddress', 'region', { region: 'eu' }, { region: 'us' }],
  ['AgentIngress', 'domain', { domain: 'agents.example.com' }, { domain: 'agents.example.net' }],
  ['SSHCertificateAuthority', 'keyType', {}, { keyType: 'rsa' }],
  [
    'SSHCertificateAuthority',
    'ellipticCurve',
    { keyType: 'ecdsa' },
    { keyType: 'ecdsa', ellipticCurve: 'p521' },
  ],
  [
    'SSHHostCertificate',
    'publicKey',
    GOOD.SSHHostCertificate!,
    withSpec('SSHHostCertificate', { publicKey: `${PUBLIC_KEY}-rotated` }),
  ],
  [
    'SSHHostCertificate',
    'sshCertificateAuthorityRef',
    GOOD.SSHHostCertificate!,
    withSpec('SSHHostCertificate', { sshCertificateAuthorityRef: { name: 'other-ca' } }),
  ],
  [
    // Switching from a reference to an id removes the reference: refused too.
    'SSHUserCertificate',
    'sshCertificateAuthorityRef',
    { sshCertificateAuthorityRef: { name: 'users-ca' }, publicKey: PUBLIC_KEY },
    { sshCertificateAuthorityId: 'sshca_2abc', publicKey: PUBLIC_KEY },
  ],
  ['SSHCredential', 'publicKey', { publicKey: PUBLIC_KEY }, { publicKey: `${PUBLIC_KEY}-2` }],
  ['TunnelCredential', 'ownerRef', {}, { ownerRef: { name: 'ci-bot' } }],
  ['TunnelCredential', 'ownerId', { ownerId: 'bot_2abc' }, { ownerId: 'bot_2xyz' }],
  ['CertificateAuthority', 'caPem', { caPem: PEM }, { caPem: PEM.replace('Q2Vy', 'QUJD') }],
  [
    'TLSCertificate',
    'certificatePem',
    GOOD.TLSCertificate!,
    withSpec('TLSCertificate', { certificatePem: PEM.replace('Q2Vy', 'QUJD') }),
  ],
  [
    'TLSCertificate',
    'privateKeySecretRef',
    GOOD.TLSCertificate!,
    withSpec('TLSCertificate', { privateKeySecretRef: { name: 'www-tls', key: 'other.key' } }),
  ],
  [
    // Inline to a Secret: a certificate stays in the form it was made in.
    'TLSCertificate',
    'certificatePem',
    GOOD.TLSCertificate!,
    { secretRef: { name: 'www-tls' } },
  ],
  ['HTTPSEdgeRoute', 'edgeRef', routeBase(), { ...routeBase(), edgeRef: { name: 'other-edge' } }],
];

const ALL_PLURALS = [
  'agentingresses',
  'sshcertificateauthorities',
  'sshhostcertificates',
  'sshusercertificates',
  'sshcredentials',
  'tunnelcredentials',
  'tunnels',
  'tlsedges',
  'httpsedges',
  'httpsedgeroutes',
  'tcpedges',
  'ippolicies',
  'reservedaddresses',
  'botusers',
  'certificateauthorities',
  'tlscertificates',
  'eventsubscriptions',
  'eventdestinations',
];

beforeAll(async () => {
  kubeconfig = inject('kubeconfig');
  // Plain `apply -f` of the folder, as users do (its Kustomization file has no .yaml extension);
  // the CRDs are cluster-wide and may already be there from another test file: apply is idempotent.
  await kubectl(['apply', '-f', CRDS_DIR]);
  await kubectl([
    'wait',
    '--for=condition=Established',
    ...ALL_PLURALS.map((plural) => `crd/${plural}.edgeward.dev`),
    '--timeout=60s',
  ]);
  await kubectl(['create', 'namespace', namespace]);
});

afterAll(async () => {
  await kubectl(['delete', 'namespace', namespace, '--wait=false']).catch(() => undefined);
});

describe('the edgeward CRDs on a real kube-apiserver', () => {
  it('install all 18 kinds, with names, short names and the edgeward category', async () => {
    const { stdout } = await kubectl(['api-resources', '--api-group=edgeward.dev', '-o', 'name']);
    expect(stdout.trim().split('\n').sort()).toEqual(
      ALL_PLURALS.map((plural) => `${plural}.edgeward.dev`).sort(),
    );
    const { stdout: categorised } = await kubectl(['api-resources', '--categories=edgeward', '-o', 'name']);
    expect(categorised.trim().split('\n').sort()).toEqual(
      ALL_PLURALS.map((plural) => `${plural}.edgeward.dev`).sort(),
    );
  });

  it('print the same CRDs from `edgeward crds`, which the apiserver takes unchanged', async () => {
    const run = promisify(execFile);
    const { stdout: yaml } = await run(process.execPath, ['--import', 'tsx', CLI, 'crds'], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const { stdout } = await kubectl(['apply', '--dry-run=server', '-f', '-'], yaml);
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(18);
    for (const line of lines)
      expect(line).toMatch(/^customresourcedefinition\.apiextensions\.k8s\.io\/\S+ \S+/);
  });

  it.each(Object.entries(GOOD))(
    'accept a realistic %s (server-side dry run), with defaults applied',
    async (kind, spec) => {
      const accepted = await dryRun(resource(kind, spec));
      expect(accepted.kind).toBe(kind);
      // Nothing was pruned (a field the schema does not know would be lost) and the defaults are set.
      expect(accepted.spec).toMatchObject(spec ?? {});
      expect(accepted.spec.deletionPolicy).toBe('Delete');
    },
  );

  it('default module fields (enabled, terminateAt) and region and key type', async () => {
    const edge = await dryRun(
      resource('TLSEdge', { backend: { backendId: 'bkdtg_2abc' }, tlsTermination: {} }),
    );
    expect(edge.spec).toEqual({
      deletionPolicy: 'Delete',
      backend: { enabled: true, backendId: 'bkdtg_2abc' },
      tlsTermination: { enabled: true, terminateAt: 'edge' },
    });
    expect((await dryRun(resource('ReservedAddress', undefined))).spec).toEqual({
      deletionPolicy: 'Delete',
      region: 'us',
    });
    expect((await dryRun(resource('SSHCertificateAuthority', {}))).spec).toEqual({
      deletionPolicy: 'Delete',
      keyType: 'ed25519',
    });
    expect((await dryRun(resource('BotUser', {}))).spec).toEqual({ deletionPolicy: 'Delete', active: true });
  });

  it.each(ALSO_GOOD)('accept %s', async (_title, kind, spec) => {
    await expect(dryRun(resource(kind, spec))).resolves.toMatchObject({ kind });
  });

  it.each(BAD)('refuse %s', async (_title, kind, spec, message) => {
    expect(await rejection(resource(kind, spec))).toContain(message);
  });

  it('refuse a missing required field', async () => {
    expect(await rejection(resource('AgentIngress', {}))).toContain('spec.domain: Required value');
    expect(await rejection(resource('TLSCertificate', { certificatePem: PEM }))).toContain(
      'spec.privateKeySecretRef: Required value: certificatePem and privateKeySecretRef go together',
    );
  });

  it.each(IMMUTABLE)('refuse a change of %s.spec.%s', async (kind, field, created, changed) => {
    const name = `immutable-${field.toLowerCase()}-${++counter}`;
    await kubectl(['apply', '-f', '-'], JSON.stringify(resource(kind, created, name)));
    const message = await rejection(resource(kind, changed, name));
    expect(message).toContain(`spec.${field}: Invalid value: ${field} is immutable`);
    // Other fields of the same object still change.
    await expect(dryRun(resource(kind, { ...created, description: 'changed' }, name))).resolves.toMatchObject(
      { spec: { description: 'changed' } },
    );
  });

  it('list every kind with `kubectl get edgeward`, with ID, READY, SYNCED, REASON and AGE columns', async () => {
    await kubectl(['apply', '-f', '-'], JSON.stringify(resource('IPPolicy', GOOD.IPPolicy, 'office')));
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify(resource('ReservedAddress', { region: 'eu' }, 'ssh-eu')),
    );
    const { stdout: names } = await kubectl(['get', 'edgeward', '-n', namespace, '-o', 'name']);
    expect(names.split('\n')).toEqual(
      expect.arrayContaining(['ippolicy.edgeward.dev/office', 'reservedaddress.edgeward.dev/ssh-eu']),
    );
    // By short name, with the kind's own columns between REASON and AGE.
    const { stdout: table } = await kubectl(['get', 'ra', 'ssh-eu', '-n', namespace]);
    expect(table.split('\n')[0]?.split(/\s+/)).toEqual([
      'NAME',
      'ID',
      'READY',
      'SYNCED',
      'REASON',
      'ADDR',
      'REGION',
      'AGE',
    ]);
    expect(table.split('\n')[1]?.split(/\s+/).slice(0, 2)).toEqual(['ssh-eu', 'eu']);
  });
});
