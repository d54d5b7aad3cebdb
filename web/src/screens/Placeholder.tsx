import { Link } from "wouter";

/** A screen the web app does not have yet: says so, and where the same data is reachable today. */
export default function Placeholder({ title, field }: { title: string; field: string }) {
  return (
    <section>
      <h1>{title}</h1>
      <p>
        This screen is not in the web app yet. The same data is in the GraphQL API: try the <code>{field}</code> query
        in <a href="/graphql">GraphiQL</a>, or go back to the <Link href="/">tasks</Link>.
      </p>
    </section>
  );
}
