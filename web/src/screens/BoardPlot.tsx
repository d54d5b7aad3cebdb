// The plot of a Dynascore board, loaded only when a board is shown: one bar per ranked model, split into what each
// weighted metric adds to (or takes from) its Dynascore. Plain SVG drawn by React: no style elements or attributes,
// which the app's Content-Security-Policy forbids (a charting library that injects them would break it).
import { useEffect, useRef, useState } from "react";
import { niceTicks } from "../lib/ticks";

export interface PlotBar {
  key: string;
  name: string;
  total: number;
  parts: Record<string, number>;
}

/** Distinct colours with at least 3:1 contrast against white (WCAG non-text contrast). */
const PALETTE = ["#1d4ed8", "#b45309", "#047857", "#be185d", "#6d28d9", "#0e7490", "#a16207", "#4d7c0f"];

const ROW = 44;
const TOP = 8;
const AXIS = 28;
const SIDE = 12;

/** The width of the element, followed as it changes (the plot is drawn at 1 unit = 1 pixel, so its text keeps its
 * size on a phone). */
function useWidth(fallback: number, shown: boolean) {
  // `shown`: the element exists (the effect measures it again when it appears).
  const ref = useRef<HTMLElement>(null);
  const [width, setWidth] = useState(fallback);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `shown` re-runs it when the element appears
  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    const observer = new ResizeObserver(() => setWidth(Math.max(240, Math.round(element.clientWidth) - 24)));
    observer.observe(element);
    return () => observer.disconnect();
  }, [shown]);
  return [ref, width] as const;
}

export default function BoardPlot({ axes, bars }: { axes: readonly string[]; bars: readonly PlotBar[] }) {
  const [ref, WIDTH] = useWidth(640, bars.length > 0);
  const best = bars[0];
  if (!best) return null;
  const colour = (name: string) => PALETTE[axes.indexOf(name) % PALETTE.length];
  let low = 0;
  let high = 0;
  for (const bar of bars) {
    const values = axes.map((a) => bar.parts[a] ?? 0);
    low = Math.min(
      low,
      values.filter((v) => v < 0).reduce((s, v) => s + v, 0),
    );
    high = Math.max(
      high,
      values.filter((v) => v > 0).reduce((s, v) => s + v, 0),
    );
  }
  const { ticks, domain } = niceTicks(low, high, 5);
  const x = (v: number) => SIDE + ((v - domain[0]) / (domain[1] - domain[0])) * (WIDTH - 2 * SIDE);
  const height = TOP + bars.length * ROW + AXIS;
  return (
    <figure className="plot" ref={ref}>
      <figcaption>
        <strong>What makes up each Dynascore.</strong> Each bar is a ranked model; each segment is what a metric adds
        (right of 0) or takes away (left of 0) at the weights above.
      </figcaption>
      <ul className="legend" aria-label="Metrics in the plot">
        {axes.map((a) => (
          <li key={a}>
            <svg width="14" height="14" aria-hidden="true">
              <rect width="14" height="14" rx="2" fill={colour(a)} />
            </svg>
            {a}
          </li>
        ))}
      </ul>
      <svg
        viewBox={`0 0 ${WIDTH} ${height}`}
        width="100%"
        role="img"
        aria-label={`Dynascores of ${bars.length} models split by metric; the best is ${best.name} at ${best.total.toFixed(3)}.`}
      >
        {ticks.map((t) => (
          <g key={t}>
            <line x1={x(t)} x2={x(t)} y1={TOP} y2={height - AXIS} stroke={t === 0 ? "#4b5160" : "#d5d9e0"} />
            <text x={x(t)} y={height - AXIS + 18} textAnchor="middle" fontSize="13" fill="#4b5160">
              {Number(t.toPrecision(6))}
            </text>
          </g>
        ))}
        {bars.map((bar, i) => {
          const y = TOP + i * ROW;
          let right = 0;
          let left = 0;
          return (
            <g key={bar.key}>
              <text x={SIDE} y={y + 14} fontSize="14" fill="#1a1c20">
                {bar.name.length > 60 ? `${bar.name.slice(0, 59)}…` : bar.name} · {bar.total.toFixed(3)}
              </text>
              {axes.map((a) => {
                const v = bar.parts[a] ?? 0;
                if (v === 0) return null;
                const from = v > 0 ? right : left + v;
                if (v > 0) right += v;
                else left += v;
                return (
                  <rect
                    key={a}
                    x={x(from)}
                    y={y + 20}
                    width={Math.max(0.5, x(from + Math.abs(v)) - x(from))}
                    height={16}
                    fill={colour(a)}
                  >
                    <title>{`${bar.name}: ${a} ${v >= 0 ? "+" : ""}${v.toFixed(3)}`}</title>
                  </rect>
                );
              })}
            </g>
          );
        })}
      </svg>
    </figure>
  );
}
