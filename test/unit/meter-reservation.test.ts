/**
 * Reservations of response_value meters (lib/domain/meters/reservation.ts): the running mean of
 * the values per request and the room one in-flight request reserves.
 */
import { describe, expect, it } from "vitest";
import {
  learnValue,
  MEAN_SAMPLES,
  reservationOf,
  shouldRecordMean,
  type ValueMean,
} from "#lib/domain/meters/reservation.ts";

describe("reservationOf", () => {
  it("is the whole limit while no value is known", () => {
    expect(reservationOf(undefined, 100)).toBe(100);
    expect(reservationOf({ sum: 0, n: 0 }, 2.5)).toBe(2.5);
  });

  it("is the mean value per request once known, to 6 significant digits", () => {
    expect(reservationOf({ sum: 120, n: 3 }, 100)).toBe(40);
    expect(reservationOf({ sum: 40, n: 3 }, 100)).toBe(13.3333);
    expect(reservationOf({ sum: 0, n: 5 }, 100)).toBe(0);
    // A mean above the limit is reserved as it is: one such request fills the window.
    expect(reservationOf({ sum: 500, n: 1 }, 100)).toBe(500);
  });
});

describe("learnValue", () => {
  it("adds a value to the running sum and count; a negative value counts as 0", () => {
    expect(learnValue(undefined, 40)).toEqual({ sum: 40, n: 1 });
    expect(learnValue({ sum: 40, n: 1 }, 20)).toEqual({ sum: 60, n: 2 });
    expect(learnValue({ sum: 60, n: 2 }, -5)).toEqual({ sum: 60, n: 3 });
  });

  it("halves the weight of the past once full, so the mean follows a change of the values", () => {
    let mean: ValueMean | undefined;
    for (let i = 0; i < MEAN_SAMPLES; i++) mean = learnValue(mean, 10);
    expect(mean).toEqual({ sum: 10 * MEAN_SAMPLES, n: MEAN_SAMPLES });
    mean = learnValue(mean, 10);
    expect(mean).toEqual({ sum: 5 * MEAN_SAMPLES + 10, n: MEAN_SAMPLES / 2 + 1 });
    for (let i = 0; i < 4 * MEAN_SAMPLES; i++) mean = learnValue(mean, 100);
    expect(reservationOf(mean, 1000)).toBeGreaterThan(99);
    expect(mean?.n).toBeLessThanOrEqual(MEAN_SAMPLES);
  });
});

describe("shouldRecordMean", () => {
  it("records when none is recorded, or the recorded one is off by more than a factor of 2", () => {
    expect(shouldRecordMean(undefined, 40)).toBe(true);
    expect(shouldRecordMean(40, 40)).toBe(false);
    expect(shouldRecordMean(40, 80)).toBe(false);
    expect(shouldRecordMean(40, 20)).toBe(false);
    expect(shouldRecordMean(40, 80.1)).toBe(true);
    expect(shouldRecordMean(40, 19.9)).toBe(true);
    expect(shouldRecordMean(0, 0)).toBe(false);
    expect(shouldRecordMean(0, 1)).toBe(true);
  });
});
