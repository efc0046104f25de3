import { generateOpenApiText } from '../server/openapi/write.js';

export async function openApiCommand(): Promise<number> {
  process.stdout.write(await generateOpenApiText());
  return 0;
}
