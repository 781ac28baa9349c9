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
    expect(row(rows, 'Supervision')?.value).toBe('0 processes of 0 sessions on record, 0 supervisors, 0 reporting resource use');
  });

  it('flags what is wrong, with the engine’s reason', () => {
    const ok = doctorReport();
    const rows = doctorRows(
      doctorReport({
        claudeCode: { path: null, version: null, seenVersion: '2.1.197', error: null },
        database: { ...ok.database, health: { state: 'rebuilt', reason: 'not a database', movedTo: '/x/mimesis/fleet.db.bad' } },
        databaseDeletedUnder: 4242,
        dataDirMode: '0755',
        dataDirOpen: '/x/mimesis is readable by other users (mode 0755); run chmod 700 /x/mimesis',
        supervision: { ...ok.supervision, supervisors: [{ pid: 77, alive: false, processes: 1, sessions: ['s1'] }] },
      }),
    );
    expect(rows.filter((r) => r.bad).map((r) => r.part)).toEqual(['Mimesis', 'Claude Code', 'Database', 'Supervision']);
    expect(row(rows, 'Mimesis')?.value).toBe('0.1.0, data in /x/mimesis (mode 0755)');
    expect(row(rows, 'Claude Code')?.value).toBe('not on PATH; newest session written by 2.1.197');
    expect(row(rows, 'Database')?.value).toContain('rebuilt (not a database; the old file is /x/mimesis/fleet.db.bad)');
    expect(row(rows, 'Database')?.value).toContain('process 4242 still has the deleted file open');
    expect(row(rows, 'Supervision')?.value).toContain('1 supervisor (1 gone)');
  });
});

it('words the report for the window: its Install button, not a command, and no jargon', async () => {
  const { windowWords } = await import('../src/lib/doctor');
  expect(windowWords('hooks are not installed in /home/me/.claude (run `mimesis hooks install` for exact statuses and work chains)')).toBe(
    'hooks are not installed in /home/me/.claude (install them above for exact statuses and work chains)',
  );
  expect(windowWords('supervised: 2 processes of 2 sessions on record (1 supervisors, 1 running); 1 publishing metrics')).toBe(
    'supervised: 2 processes of 2 sessions on record (1 supervisors, 1 running); 1 reporting resource use',
  );
});
