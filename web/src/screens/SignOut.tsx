import { useState } from "react";
import { useMutation } from "urql";
import { useLocation } from "wouter";
import { graphql } from "../gql";
import { useAuth } from "../lib/auth";

const Logout = graphql(`
  mutation Logout {
    logout {
      __typename
    }
  }
`);

/** Revokes the token in use on the server, then forgets it here (even if the server could not be reached: the
 * token is then only forgotten, and says so). */
export function SignOutButton() {
  const { signOut } = useAuth();
  const [, logout] = useMutation(Logout);
  const [, navigate] = useLocation();
  const [busy, setBusy] = useState(false);
  return (
    <button
      type="button"
      className="link"
      disabled={busy}
      onClick={async () => {
        setBusy(true);
        const result = await logout({});
        if (result.error) console.warn("sign-out: the server could not revoke the token", result.error.message);
        signOut();
        navigate("/");
      }}
    >
      Sign out
    </button>
  );
}
