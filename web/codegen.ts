// GraphQL Code Generator: types every operation in src/ against the server's published schema, and writes the
// trusted-documents manifest (document hash -> text) that the server registers and the app sends ids of.
import type { CodegenConfig } from "@graphql-codegen/cli";
import { addTypenameSelectionDocumentTransform } from "@graphql-codegen/client-preset";

const config: CodegenConfig = {
  schema: "../schema.graphql",
  documents: ["src/**/*.{ts,tsx}", "!src/gql/**/*"],
  ignoreNoDocuments: false,
  generates: {
    "src/gql/": {
      preset: "client",
      // Graphcache normalises by __typename and id: the registered documents must ask for __typename everywhere,
      // since the server runs the registered text, not what the client would have sent.
      documentTransforms: [addTypenameSelectionDocumentTransform],
      presetConfig: {
        fragmentMasking: false,
        persistedDocuments: { mode: "embedHashInDocument", hashAlgorithm: "sha256" },
      },
      config: {
        useTypeImports: true,
        enumsAsTypes: true,
        scalars: { DateTime: "string", JSON: "unknown", Upload: "File" },
        skipTypename: false,
      },
    },
  },
};

export default config;
