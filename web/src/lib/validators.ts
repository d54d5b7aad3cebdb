// Validator quality in words: Krippendorff's alpha read by the usual rule of thumb, the validators below an owner's
// bar, and times.

/** Alpha in words: the figure and how it is usually read (0.8 and over reliable, 0.667 the lowest for tentative
 * conclusions), or why there is none. */
export function alphaInWords(alpha: number | null | undefined, paired: number): string {
  if (alpha == null)
    return paired === 0
      ? "no example has two crowd votes yet"
      : `undefined: every vote on the ${paired} paired example${paired === 1 ? "" : "s"} has the same label`;
  const reading =
    alpha >= 0.8 ? "reliable" : alpha >= 0.667 ? "tentative" : alpha > 0 ? "low" : "no better than chance";
  return `Krippendorff's α ${alpha.toFixed(2)} (${reading}) over ${paired} example${paired === 1 ? "" : "s"}`;
}

/** The validators whose agreement with decisions is under ``agreement`` (0 to 1) over at least ``decided`` decided
 * votes, and who are not excluded already. */
export function belowBar<
  V extends { agreement?: number | null; decidedVotes: number; weight: number; user: { username: string } },
>(validators: readonly V[], agreement: number, decided: number): V[] {
  return validators.filter(
    (v) => v.weight > 0 && v.agreement != null && v.decidedVotes >= decided && v.agreement < agreement,
  );
}

/** A time in milliseconds as seconds for people; a dash when there is none. */
export function seconds(ms: number | null | undefined): string {
  if (ms == null) return "–";
  return ms < 60_000
    ? `${(ms / 1000).toFixed(1)} s`
    : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}
