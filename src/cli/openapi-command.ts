import { defineCommand } from './command.js';

export const openApiCommand = defineCommand({
  name: 'openapi',
  summary: 'print the OpenAPI 3.1 document of the management API',
  description: 'Prints the OpenAPI 3.1 document of the management API (JSON) to stdout.',
  flags: {},
  run: async () => {
    const { generateOpenApiText } = await import('../server/openapi/write.js');
    process.stdout.write(await generateOpenApiText());
    return 0;
  },
});
