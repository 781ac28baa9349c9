// Other machines as the session views see them: whether a session's machine is away, and why.
import type { HostInfo } from './types';

/** Why a machine that is not live is away, in a sentence (its rows are the last state seen). */
export function awayReason(h: HostInfo): string {
  const state = h.state === 'helper_missing' ? 'without Mimesis' : h.state;
  return `${h.host} is ${state}${h.message ? `: ${h.message}` : ''}. This is the last state seen${h.lastSeen ? ` at ${h.lastSeen}` : ''}.`;
}

/** Every machine that is not live, with why. */
export function awayHosts(hosts: readonly HostInfo[]): Map<string, string> {
  return new Map(hosts.filter((h) => h.state !== 'live').map((h) => [h.host, awayReason(h)]));
}

/**
 * Why the session's machine is away, or undefined for a local session or a live machine. A
 * machine the list does not know (yet) is not called away: the row says what was last heard.
 */
export function sessionAway(hosts: readonly HostInfo[], host: string | null | undefined): string | undefined {
  if (!host) return undefined;
  const h = hosts.find((x) => x.host === host);
  return h && h.state !== 'live' ? awayReason(h) : undefined;
}
