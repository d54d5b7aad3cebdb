// Amounts in a currency's minor units (pence, cents), as the crowd study API gives them, shown as people read them.

/** `75` in GBP: "£0.75"; an unknown currency code falls back to "0.75 XYZ". */
export function money(minor: number, currency: string): string {
  try {
    return new Intl.NumberFormat("en-GB", { style: "currency", currency }).format(minor / 100);
  } catch {
    return `${(minor / 100).toFixed(2)} ${currency}`;
  }
}

/** The rows of a bonus file ("participant,amount" lines, amounts in major units) with amounts in minor units. */
export function bonusRows(file: string): { participant: string; amount: number }[] {
  const rows: { participant: string; amount: number }[] = [];
  for (const line of file.split("\n")) {
    const [participant, amount] = line.split(",");
    if (participant && amount) rows.push({ participant, amount: Math.round(Number(amount) * 100) });
  }
  return rows;
}
