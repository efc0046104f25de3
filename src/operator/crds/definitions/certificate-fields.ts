import { z } from 'zod';

/** Status fields X.509 resources share, derived by the server from the certificate. */
const timestamp = z.string().meta({ format: 'date-time' });

export const x509StatusFields = {
  subjectCommonName: z.string().optional(),
  notBefore: timestamp.optional(),
  notAfter: timestamp.optional(),
  keyUsages: z.array(z.string()).optional(),
  extendedKeyUsages: z.array(z.string()).optional(),
};

export const x509Columns = [
  { name: 'Subject', type: 'string', jsonPath: '.status.subjectCommonName' },
  // A future time shows as '<invalid>' with type date, so the expiry is shown as written.
  { name: 'Not After', type: 'string', jsonPath: '.status.notAfter' },
] as const;

/** PEM text: a certificate or a chain is a few kilobytes; this leaves room for long chains. */
export const PEM_MAX_CHARS = 65536;
