// Amounts in a currency's minor units (pence, cents), as the crowd study API gives them, shown as people read them.

/** `75` in GBP: "£0.75"; an unknown currency code falls back to "0.75 XYZ". */
export function money(minor: number, currency: string): string {
  try {
    return new Intl.NumberFormat("en-GB", { style: "currency", currency }).format(minor / 100);
  } catch {
    return `${(minor / 100).toFixed(2)} ${currency}`;
  }
}
