/**
 * Reservations of a `response_value` meter (docs/meters.md "Reservations"). Pure.
 *
 * A request admitted by a limited window of a `response_value` meter reserves room in it before
 * the target is called (its value is not known yet), and the settlement after the answer replaces
 * that reservation with the real value. The reservation is the mean value per request this
 * instance has seen for the meter, starting from the mean recorded on the meter (`valueMean`);
 * while neither is known, the window's whole limit (one request at a time until a value is).
 */

/** The values per request a meter has given, as a running sum and count. */
export interface ValueMean {
  sum: number;
  n: number;
}

/** Values a running mean weighs before it is halved: it follows the last few hundred answers. */
export const MEAN_SAMPLES = 256;

/** The mean after one more value (values below 0 count as 0, as the extraction gives them). */
export function learnValue(mean: ValueMean | undefined, value: number): ValueMean {
  const full = mean !== undefined && mean.n >= MEAN_SAMPLES;
  const sum = mean ? (full ? mean.sum / 2 : mean.sum) : 0;
  const n = mean ? (full ? mean.n / 2 : mean.n) : 0;
  return { sum: sum + Math.max(0, value), n: n + 1 };
}

/**
 * The room one in-flight request reserves in a window limited to `limit`: the mean value per
 * request (6 significant digits), or the whole limit while no value is known.
 */
export const reservationOf = (mean: ValueMean | undefined, limit: number): number =>
  mean?.n ? Number((mean.sum / mean.n).toPrecision(6)) : limit;

/**
 * Whether an instance records its mean on the meter (for instances that have seen no value yet):
 * when none is recorded, or the recorded one is less than half or more than double it. So a meter
 * whose values keep their size is written a few times in its life, not per request.
 */
export const shouldRecordMean = (recorded: number | undefined, mean: number): boolean =>
  recorded === undefined || mean > recorded * 2 || mean < recorded / 2;
