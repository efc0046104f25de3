const CRLF = Buffer.from('\r\n');
const HEADERS_END = Buffer.from('\r\n\r\n');
const DASH = 0x2d;

/**
 * The text fields (parts without a filename) of a `multipart/form-data` body (RFC 7578): name to
 * the first value. Enough to read a handful of fields; file contents are skipped, not decoded.
 */
export function multipartFields(body: Buffer, boundary: string): Map<string, string> {
  const fields = new Map<string, string>();
  const delimiter = Buffer.from(`--${boundary}`);
  const nextDelimiter = Buffer.concat([CRLF, delimiter]);
  let at = body.indexOf(delimiter);
  while (at >= 0) {
    let partStart = at + delimiter.length;
    if (body[partStart] === DASH && body[partStart + 1] === DASH) break; // the closing delimiter
    if (body.subarray(partStart, partStart + 2).equals(CRLF)) partStart += 2;
    const partEnd = body.indexOf(nextDelimiter, partStart);
    if (partEnd < 0) break;
    const part = body.subarray(partStart, partEnd);
    const headersEnd = part.indexOf(HEADERS_END);
    if (headersEnd >= 0) {
      const disposition = part
        .subarray(0, headersEnd)
        .toString('utf8')
        .split('\r\n')
        .find((line) => line.toLowerCase().startsWith('content-disposition:'));
      const name = disposition === undefined ? undefined : /;\s*name="([^"]*)"/i.exec(disposition)?.[1];
      const isFile = disposition !== undefined && /;\s*filename\*?=/i.test(disposition);
      if (name !== undefined && !isFile && !fields.has(name)) {
        fields.set(name, part.subarray(headersEnd + HEADERS_END.length).toString('utf8'));
      }
    }
    at = partEnd + CRLF.length;
  }
  return fields;
}
