// The browser preview (`npm run dev`, ui/scripts/shots.mjs): the UI on a replay of what the
// real app recorded (tests/recordings, made by scripts/record-ui), at the recorded pace.
// URL switches:
//   ?rec=demo    which recording (default demo; pty: a supervised session's life)
//   ?load=1      which page load of it (demo: 1 starts empty, 2, the default, with the demo running)
//   ?still       nothing plays by itself (stable screenshots)
//   ?fast        no waiting between the recorded events
//   ?flood=50    50 MB of output on the first terminal attach, then "FLOOD-DONE <ms>"

import { ReplayBackend, parseRecording } from './replay';

const recordings = import.meta.glob<string>('../../tests/recordings/*.jsonl', { query: '?raw', import: 'default' });

export async function previewBackend(params: URLSearchParams): Promise<ReplayBackend> {
  const name = params.get('rec') ?? 'demo';
  const load = recordings[`../../tests/recordings/${name}.jsonl`];
  if (!load) throw new Error(`no recording named ${name}: ${Object.keys(recordings).join(', ')}`);
  return new ReplayBackend(parseRecording(await load()), {
    name: `recordings/${name}.jsonl`,
    load: Number(params.get('load') ?? (name === 'demo' ? 2 : 1)),
    auto: !params.has('still'),
    pace: params.has('fast') ? 0 : 1,
    floodMb: Number(params.get('flood') ?? 0) || 0,
  });
}
