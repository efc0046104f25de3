/**
 * Input the crypto helpers refuse (a PEM that is not a certificate, a key that does not match).
 * The message starts with the field it names; the server answers it as a 400, other callers (the
 * edge, the dev cluster) as the error it is. This room knows nothing of HTTP.
 */
export class InvalidInputError extends Error {
  override readonly name = 'InvalidInputError';
}
