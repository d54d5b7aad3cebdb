import { useEffect, useRef } from "react";

// Lists kept current by the task's update subscriptions (evaluationUpdated, trainingJobUpdated,
// adversaryRunUpdated): a screen reads its list with Task.updatesCursor, subscribes from that cursor, and shows each
// listed object as the latest event says it is now. No polling: the server sends every change, and what changed
// between the list and the subscription first.

interface Tracked {
  id: string;
  status: string;
}

/** The latest state of each object an update subscription sent, by id. */
export type Latest<T extends Tracked> = ReadonlyMap<string, T>;

/** `latest` with `object` as the newest state of its id (a new map: a subscription's reducer). */
export function withLatest<T extends Tracked>(latest: Latest<T>, object: T): Latest<T> {
  const next = new Map(latest);
  next.set(object.id, object);
  return next;
}

/** The listed objects, each replaced by its latest state when an event brought one (order and membership are the
 * list's: an object the list lacks is the reason to reload it). A list reloaded after the event may be newer: an
 * object it shows ended stays ended. */
export function currentOf<T extends Tracked>(list: readonly T[], latest: Latest<T> | undefined): T[] {
  if (!latest?.size) return [...list];
  return list.map((object) => {
    const event = latest.get(object.id);
    return event && (isUnfinished(object.status) || !isUnfinished(event.status)) ? event : object;
  });
}

/** Whether an object's status is one it may still leave (QUEUED or RUNNING). */
export const isUnfinished = (status: string): boolean => status === "QUEUED" || status === "RUNNING";

/** The objects, in a list that is loaded and kept current, that the events say the list lacks (reload the list):
 * ids, sorted, so that a screen reacts once per change (an effect keyed on them). */
export function unknownOf(list: readonly Tracked[], latest: Latest<Tracked> | undefined): string[] {
  if (!latest?.size) return [];
  const listed = new Set(list.map((object) => object.id));
  return [...latest.keys()].filter((id) => !listed.has(id)).sort();
}

/** The ids of the objects that were queued or running in `before` (id to status) and have finished `now`. */
export function endedBetween(before: ReadonlyMap<string, string> | null, now: readonly Tracked[]): string[] {
  if (!before) return [];
  return now
    .filter((object) => !isUnfinished(object.status) && isUnfinished(before.get(object.id) ?? "DONE"))
    .map((object) => object.id)
    .sort();
}

/** Calls `onEnded` once each time objects shown queued or running are shown finished: what depends on their end
 * (results, a ranking, a registry) is read again. The objects are those a screen shows, however they were kept
 * current (a normalised cache or an update subscription). */
export function useEnded(objects: readonly Tracked[], onEnded: () => void): void {
  const seen = useRef<ReadonlyMap<string, string> | null>(null);
  const key = objects.map((object) => `${object.id}:${object.status}`).join();
  const latest = useRef({ objects, onEnded });
  latest.current = { objects, onEnded };
  // biome-ignore lint/correctness/useExhaustiveDependencies: the key stands for the objects' ids and statuses
  useEffect(() => {
    const { objects: now, onEnded: ended } = latest.current;
    const before = seen.current;
    seen.current = new Map(now.map((object) => [object.id, object.status]));
    if (endedBetween(before, now).length) ended();
  }, [key]);
}
