import { describe, expect, it } from 'vitest';
import { doctorRows } from '../src/lib/doctor';
import { doctorReport } from './helpers';

const row = (rows: ReturnType<typeof doctorRows>, part: string) => rows.find((r) => r.part === part);

describe('the doctor report, part by part', () => {
  it('says each part in words and flags nothing when all is well', () => {
    const rows = doctorRows(doctorReport());
    expect(rows.map((r) => r.part)).toEqual(['Mimesis', 'Config folder', 'Claude Code', 'File watching', 'Database', 'Hook events', 'Supervision']);
    expect(rows.filter((r) => r.bad)).toEqual([]);
    expect(row(rows, 'Mimesis')?.value).toBe('0.1.0, data in /x/mimesis (mode 0700)');
    expect(row(rows, 'Config folder')?.value).toBe('/x/.claude: 3 sessions, hooks installed');
    expect(row(rows, 'File watching')?.value).toBe('ok (up to 65,536 watches)');
    expect(row(rows, 'Supervision')?.value).toBe('no supervised sessions yet');
    expect(row(rows, 'Database')?.value).toBe('/x/mimesis/fleet.db: ok, 3 sessions, 0 links in work chains, 12 KB, schema 1');
  });

  it('says when the last hook event came in the window’s date style, not as ISO', () => {
    const at = new Date(2026, 11, 3, 16, 37, 39, 139);
    const rows = (now: Date) =>
      doctorRows(doctorReport({ hookSpool: { path: '/x/mimesis/hooks', files: 1, events: 2, lastEventAt: at.toISOString() } }), now.getTime());
    expect(row(rows(new Date(2026, 11, 3, 18, 0)), 'Hook events')?.value).toBe('/x/mimesis/hooks: 1 file, 2 events, the last at 16:37:39');
    expect(row(rows(new Date(2026, 11, 4, 9, 0)), 'Hook events')?.value).toBe('/x/mimesis/hooks: 1 file, 2 events, the last at 3 Dec 2026, 16:37');
  });

  it('says the supervised sessions in plain words', () => {
    const sup = doctorReport().supervision;
    const value = (over: Partial<typeof sup>) => row(doctorRows(doctorReport({ supervision: { ...sup, ...over } })), 'Supervision')?.value;
    const publisher = { pid: 7, startTicks: 1, updatedAt: '2026-12-03T16:37:39.139Z', sessions: 1, path: '/m/7.json' };
    expect(value({ metricsPublishers: [publisher] })).toBe('no supervised sessions yet; 1 running Mimesis process reports resource use');
    expect(
      value({ recordedProcesses: 1, recordedSessions: 1, supervisors: [{ pid: 7, alive: true, processes: 1, sessions: ['s1'] }], metricsPublishers: [publisher] }),
    ).toBe('1 supervised session (1 process), run by a Mimesis that is running; 1 running Mimesis process reports resource use');
    expect(
      value({
        recordedProcesses: 3,
        recordedSessions: 2,
        supervisors: [
          { pid: 7, alive: false, processes: 1, sessions: ['s1'] },
          { pid: 8, alive: true, processes: 2, sessions: ['s2'] },
        ],
        staleMetrics: 1,
      }),
    ).toBe('2 supervised sessions (3 processes), run by 2 Mimesis processes, 1 of them gone; resource figures left by 1 Mimesis process that is gone');
  });

  it('flags what is wrong, with the engine’s reason', () => {
    const ok = doctorReport();
    const rows = doctorRows(
      doctorReport({
        claudeCode: { path: null, onPath: false, version: null, seenVersion: '2.1.197', error: null },
        database: { ...ok.database, health: { state: 'rebuilt', reason: 'not a database', movedTo: '/x/mimesis/fleet.db.bad' } },
        databaseDeletedUnder: 4242,
        dataDirMode: '0755',
        dataDirOpen: '/x/mimesis is readable by other users (mode 0755); run chmod 700 /x/mimesis',
        supervision: { ...ok.supervision, recordedProcesses: 1, recordedSessions: 1, supervisors: [{ pid: 77, alive: false, processes: 1, sessions: ['s1'] }] },
      }),
    );
    expect(rows.filter((r) => r.bad).map((r) => r.part)).toEqual(['Mimesis', 'Claude Code', 'Database', 'Supervision']);
    expect(row(rows, 'Mimesis')?.value).toBe('0.1.0, data in /x/mimesis (mode 0755)');
    expect(row(rows, 'Claude Code')?.value).toBe('not found; newest session written by 2.1.197');
    expect(row(rows, 'Database')?.value).toContain('rebuilt (not a database; the old file is /x/mimesis/fleet.db.bad)');
    expect(row(rows, 'Database')?.value).toContain('process 4242 still has the deleted file open');
    expect(row(rows, 'Supervision')?.value).toBe('1 supervised session (1 process), run by a Mimesis that is gone');
  });
});

it('words the report for the window: its Install hooks button, not a command', async () => {
  const { windowWords } = await import('../src/lib/doctor');
  expect(windowWords('hooks are not installed in /home/me/.claude (run `mimesis hooks install` for exact statuses and work chains)')).toBe(
    'hooks are not installed in /home/me/.claude (press Install hooks above for exact statuses and work chains)',
  );
  expect(windowWords('hooks in /h/settings.json run /usr/bin/mimesis, which is not installed; run `mimesis hooks uninstall` or reinstall Mimesis')).toBe(
    'hooks in /h/settings.json run /usr/bin/mimesis, which is not installed; press Install hooks above to point them at this Mimesis, or Uninstall to remove them',
  );
  // Other lines are the engine's words as they are.
  const line = 'supervised sessions: none yet';
  expect(windowWords(line)).toBe(line);
});
