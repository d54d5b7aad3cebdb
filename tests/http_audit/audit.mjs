// Runs graphql-http's server audits against the GraphQL endpoint given as the first argument and prints one JSON
// line per audit ({id, name, status, reason}); the Python test reads them. Exits 0 whatever the audits say.
import { serverAudits } from 'graphql-http';

const url = process.argv[2];
if (!url) {
  console.error('usage: node audit.mjs http://127.0.0.1:PORT/graphql');
  process.exit(2);
}
for (const audit of serverAudits({ url, fetchFn: fetch })) {
  const result = await audit.fn();
  console.log(JSON.stringify({ id: audit.id, name: audit.name, status: result.status, reason: result.reason ?? null }));
}
