// The GraphQL client: urql with graphcache (a normalised cache keyed on the schema's global ids), operations sent
// by their trusted-document id over HTTP, subscriptions over graphql-ws.
import { Client, fetchExchange, subscriptionExchange } from "@urql/core";
import { cacheExchange } from "@urql/exchange-graphcache";
import { persistedExchange } from "@urql/exchange-persisted";
import { createClient as createWsClient } from "graphql-ws";
import { embeddedTypes, possibleTypes } from "../gql/cache-schema";
import { subscriptionTexts } from "../gql/subscription-texts";

interface HashedDocument {
  __meta__?: { hash?: string };
}

const hashOf = (document: unknown): string | undefined => (document as HashedDocument).__meta__?.hash;

function websocketUrl(): string {
  const { protocol, host } = window.location;
  return `${protocol === "https:" ? "wss:" : "ws:"}//${host}/graphql`;
}

/** A client signed in with `token` (or anonymous). A new one is made whenever the token changes, so that nothing
 * one account cached is ever shown to another. */
export function makeClient(token: string | null): { client: Client; dispose: () => void } {
  const ws = createWsClient({
    url: websocketUrl(),
    lazy: true,
    connectionParams: () => (token ? { authorization: `Bearer ${token}` } : {}),
    retryAttempts: 1000,
    shouldRetry: () => true,
  });
  const keys = Object.fromEntries(embeddedTypes.map((name) => [name, () => null]));
  const client = new Client({
    url: "/graphql",
    fetchOptions: (): RequestInit => (token ? { headers: { authorization: `Bearer ${token}` } } : {}),
    exchanges: [
      cacheExchange({ keys, possibleTypes, globalIDs: true }),
      persistedExchange({
        // Every operation is registered at build time: send its id, never fall back to the text.
        enforcePersistedQueries: true,
        enableForMutation: true,
        generateHash: async (_query, document) => hashOf(document),
      }),
      fetchExchange,
      subscriptionExchange({
        forwardSubscription(request, operation) {
          const hash = hashOf(operation.query);
          const query = (hash && subscriptionTexts[hash]) || request.query || "";
          return {
            subscribe(sink) {
              const unsubscribe = ws.subscribe({ ...request, query }, sink);
              return { unsubscribe };
            },
          };
        },
      }),
    ],
  });
  return { client, dispose: () => void ws.dispose() };
}
