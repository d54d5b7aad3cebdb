import type { ReactNode } from "react";

/** A wide table's box, scrolled sideways on a narrow screen: a named region that keyboard users can focus and
 * scroll with the arrow keys (WCAG 2.1.1; axe's scrollable-region-focusable). */
export function ScrollBox({ label, children }: { label: string; children: ReactNode }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be focusable to scroll by keyboard
    <section className="table-scroll" aria-label={label} tabIndex={0}>
      {children}
    </section>
  );
}
