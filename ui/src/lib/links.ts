// Links in transcripts and terminals (issue 16 §7): untrusted text, opened by the system's
// browser through the app's `open_link`, whose allow-list (mimesis_core::links) has the last
// word. Here only to decide what is shown as a link: a plain web address, nothing else.

import type { Backend } from './backend';

const MAX_URL = 2048;

/** Whether the app would open `url`: http:// or https:// with a host, no spaces or control characters. */
export function openable(url: string): boolean {
  if (url.length > MAX_URL) return false;
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\s\u0000-\u001f\u007f]/.test(url)) return false;
  return /^https?:\/\/(?:[^/?#@]*@)?[^/?#:@]+/i.test(url);
}

/** Opens `url` in the system's browser through the window's engine; the reason when it was not opened. */
export async function openLink(backend: Backend | null, url: string): Promise<string | null> {
  if (!openable(url)) return 'Only web addresses (http:// or https://) are opened.';
  if (!backend) return 'Links open in the app’s window.';
  try {
    await backend.call('open_link', { url });
    return null;
  } catch (e) {
    return String(e);
  }
}
