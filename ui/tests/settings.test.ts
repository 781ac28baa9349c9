// U6: client-side validation mirrors the engine's ranges; nothing is saved on error; server
// errors show per field.
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import SettingsView from '../src/components/settings/SettingsView.svelte';
import { engineContext } from '../src/lib/app.svelte';
import { RosterStore } from '../src/lib/store.svelte';
import { DEFAULT_SETTINGS, NUMBER_SECTIONS, errorsByField, humanSeconds, linesOf, patternProblem, rangeHint, setPath, validateSettings } from '../src/lib/settings';
import type { InEffect, Settings } from '../src/lib/types';
import { MockBackend, doctorReport } from './helpers';

const clone = (): Settings => structuredClone(DEFAULT_SETTINGS);

describe('validateSettings', () => {
  it('accepts the defaults (the SPEC’s), which sit inside every range', () => {
    expect(validateSettings(clone())).toEqual([]);
    for (const sec of NUMBER_SECTIONS) for (const f of sec.fields) expect(f.min).toBeLessThanOrEqual(f.max);
  });

  it('says the idle timeout range in the contract’s words', () => {
    const s = setPath(clone(), 'limits.idleTimeoutSecs', 30);
    expect(validateSettings(s)).toEqual([{ field: 'limits.idleTimeoutSecs', message: 'must be between 60 and 7200 seconds (1–120 min)' }]);
    expect(validateSettings(setPath(clone(), 'limits.idleTimeoutSecs', 7200))).toEqual([]);
    expect(validateSettings(setPath(clone(), 'limits.idleTimeoutSecs', 7201))).toHaveLength(1);
  });

  it('rejects empty, fractional and out-of-range numbers', () => {
    expect(validateSettings(setPath(clone(), 'limits.maxLiveSessions', NaN))[0].message).toBe('must be a number');
    expect(validateSettings(setPath(clone(), 'limits.maxLiveSessions', 2.5))[0].message).toBe('must be a whole number');
    expect(validateSettings(setPath(clone(), 'limits.maxLiveSessions', 0))[0].message).toBe('must be between 1 and 64');
    expect(validateSettings(setPath(clone(), 'limits.maxRssMb', 10))[0].message).toBe('must be between 64 and 1048576 MB');
  });

  it('checks cross-field rules, crash patterns and the agent command', () => {
    let s = setPath(clone(), 'limits.diskCleanupPercent', 70);
    expect(validateSettings(s)).toEqual([{ field: 'limits.diskCleanupPercent', message: 'must be above the warning level' }]);
    s = setPath(clone(), 'limits.crashPatterns', ['ok', '(unclosed']);
    expect(validateSettings(s)).toEqual([{ field: 'limits.crashPatterns', message: 'pattern 2 is not a valid regular expression' }]);
    expect(patternProblem('x'.repeat(501))).toMatch(/at most/);
    s = setPath(clone(), 'agent.command', '  ');
    expect(errorsByField(validateSettings(s))).toEqual({ 'agent.command': 'must not be empty' });
    s = setPath(clone(), 'limits.suspendMode', 'pause');
    expect(validateSettings(s)[0].field).toBe('limits.suspendMode');
  });

  it('gives a range in a field’s help in the unit typed into that field', () => {
    const fields = NUMBER_SECTIONS.flatMap((sec) => sec.fields);
    const idle = fields.find((f) => f.path === 'limits.idleTimeoutSecs');
    expect(idle?.help).toBe('60–7200 s (1–120 min); starts when a turn ends.');
    expect(rangeHint({ min: 1, max: 99, unit: '%' })).toBe('1–99 %');
    expect(rangeHint({ min: 1, max: 64, unit: '' })).toBe('1–64');
    // Any range a help gives first is in the field's own unit, and is the field's range.
    for (const f of fields) {
      const m = /(\d+)–(\d+)(?: (s|min|h|MB|%))?/.exec(f.help ?? '');
      if (!m) continue;
      expect([f.path, m[3] ?? '']).toEqual([f.path, f.unit]);
      expect([Number(m[1]), Number(m[2])]).toEqual([f.min, f.max]);
    }
  });

  it('reads lists one item per line and shows seconds in people’s units', () => {
    expect(linesOf('a\r\n\n  \nb')).toEqual(['a', 'b']);
    expect(humanSeconds(14_400)).toBe('4 h');
    expect(humanSeconds(600)).toBe('10 min');
    expect(humanSeconds(30)).toBe('');
  });
});

describe('SettingsView', () => {
  function setup(serverErrors: { field: string; message: string }[] = [], overrides: InEffect['overrides'] = []) {
    let stored = clone();
    const b = new MockBackend({
      settings_in_effect: () => ({ overrides, notApplied: [] }),
      settings_get: () => stored,
      settings_set: ({ settings }) => {
        if (serverErrors.length) return { settings: stored, errors: serverErrors };
        stored = settings;
        return { settings, errors: [] };
      },
      hooks_status: () => [{ root: '/home/me/.claude', settingsPath: '/home/me/.claude/settings.json', installed: false, partial: false, error: null, missingProgram: null }],
      hooks_install: () => [{ root: '/home/me/.claude', settingsPath: '/home/me/.claude/settings.json', installed: true, partial: false, error: null, missingProgram: null }],
      hooks_uninstall: () => Promise.reject(new Error('settings.json is not valid JSON (line 3); nothing was changed')),
      doctor: () => ({
        lines: ['Claude Code: 2.1.197 (newest session written by 2.1.197)', 'database /x/fleet.db: ok, 3 sessions, 0 chain links, 12 KB'],
        problems: ['hooks are not installed in /x/.claude/settings.json (run `mimesis hooks install` for exact statuses and work chains)'],
        report: doctorReport(),
      }),
    });
    const r = render(SettingsView, { context: engineContext({ backend: b, store: new RosterStore(b) }) });
    return { b, ...r, stored: () => stored };
  }
  const input = (c: HTMLElement, field: string) => c.querySelector<HTMLInputElement>(`[data-field="${field}"]`) as HTMLInputElement;

  it('saves nothing while a field is out of range and says which', async () => {
    const { b, container } = setup();
    await waitFor(() => expect(input(container, 'limits.idleTimeoutSecs')).not.toBeNull());
    await fireEvent.input(input(container, 'limits.idleTimeoutSecs'), { target: { value: '30' } });
    await fireEvent.click(container.querySelector('[data-testid=settings-save]') as HTMLElement);
    const err = container.querySelector('[data-testid=field-error][data-field="limits.idleTimeoutSecs"]');
    expect(err?.textContent).toBe('must be between 60 and 7200 seconds (1–120 min)');
    expect(b.count('settings_set')).toBe(0);
    expect(container.textContent).toContain('Nothing saved');
  });

  it('says what is wrong with a field as soon as it is left, before any Save', async () => {
    const { b, container } = setup();
    await waitFor(() => expect(input(container, 'limits.durationWarnPercent')).not.toBeNull());
    const warn = input(container, 'limits.durationWarnPercent');
    await fireEvent.input(warn, { target: { value: '150' } });
    // Still being typed into: not judged yet.
    expect(container.querySelector('[data-testid=field-error]')).toBeNull();
    await fireEvent.blur(warn);
    const err = container.querySelector('[data-testid=field-error][data-field="limits.durationWarnPercent"]');
    expect(err?.textContent).toBe('must be between 1 and 99 %');
    expect(warn.getAttribute('aria-invalid')).toBe('true');
    // Described by its help (its range) and its error.
    expect(warn.getAttribute('aria-describedby')?.split(' ')).toEqual([warn.id + '-help', err?.id]);

    const approval = input(container, 'watch.approvalTimeoutSecs');
    await fireEvent.input(approval, { target: { value: '0' } });
    await fireEvent.blur(approval);
    expect(container.querySelector('[data-testid=field-error][data-field="watch.approvalTimeoutSecs"]')?.textContent).toBe('must be between 1 and 120 seconds');
    expect(b.count('settings_set')).toBe(0);
    expect(container.textContent).not.toContain('Nothing saved');
  });

  it('keeps each field’s error line in place before a message comes, so the fields below do not move', async () => {
    const { container } = setup();
    await waitFor(() => expect(input(container, 'limits.durationWarnPercent')).not.toBeNull());
    // Every field that can be wrong has its error line from the start (the notification
    // check boxes, which cannot be, have none).
    const controls = [...container.querySelectorAll<HTMLElement>('.card .field [data-field]:is(input, select, textarea)')];
    const fields = new Set(controls.map((c) => c.getAttribute('data-field')));
    const slots = [...container.querySelectorAll<HTMLElement>('[data-testid=error-slot]')];
    expect(new Set(slots.map((s) => s.getAttribute('data-field')))).toEqual(fields);
    expect(container.querySelector('[data-testid=field-error]')).toBeNull();

    const shape = (el: Element) => [...el.children].map((c) => `${c.tagName}.${c.className}`);
    const field = input(container, 'limits.durationWarnPercent').closest('.field') as HTMLElement;
    const before = shape(field);
    await fireEvent.input(input(container, 'limits.durationWarnPercent'), { target: { value: '150' } });
    await fireEvent.click(container.querySelector('[data-testid=settings-save]') as HTMLElement);
    // The message fills the line kept for it: the field has the same parts as before.
    const slot = field.querySelector('[data-testid=error-slot]') as HTMLElement;
    expect(slot.querySelector('[data-testid=field-error]')?.textContent).toBe('must be between 1 and 99 %');
    expect(shape(field).map((c) => c.replace(' bad', ''))).toEqual(before.map((c) => c.replace(' bad', '')));
    expect(container.querySelectorAll('[data-testid=error-slot]')).toHaveLength(slots.length);
  });

  it('sends the whole document and shows what was saved', async () => {
    const { b, container, stored } = setup();
    await waitFor(() => expect(input(container, 'limits.maxLiveSessions')).not.toBeNull());
    await fireEvent.input(input(container, 'limits.maxLiveSessions'), { target: { value: '5' } });
    await fireEvent.click(input(container, 'notifications.crashed'));
    await fireEvent.click(container.querySelector('[data-testid=settings-save]') as HTMLElement);
    await waitFor(() => expect(b.count('settings_set')).toBe(1));
    await waitFor(() => expect(container.textContent).toContain('Saved.'));
    // Saved, Save is off but stays a control the keyboard is on (not a disabled one it falls from).
    const save = container.querySelector('[data-testid=settings-save]') as HTMLButtonElement;
    expect([save.disabled, save.getAttribute('aria-disabled')]).toEqual([false, 'true']);
    await fireEvent.click(save);
    expect(b.count('settings_set')).toBe(1);
    expect(stored().limits.maxLiveSessions).toBe(5);
    expect(stored().notifications.crashed).toBe(false);
    expect(stored().watch).toEqual(DEFAULT_SETTINGS.watch);
  });

  it('shows the engine’s errors next to their fields', async () => {
    const { container } = setup([{ field: 'agent.command', message: 'claud was not found on PATH' }]);
    await waitFor(() => expect(input(container, 'agent.command')).not.toBeNull());
    await fireEvent.input(input(container, 'agent.command'), { target: { value: 'claud' } });
    await fireEvent.click(container.querySelector('[data-testid=settings-save]') as HTMLElement);
    await waitFor(() =>
      expect(container.querySelector('[data-testid=field-error][data-field="agent.command"]')?.textContent).toBe('claud was not found on PATH'),
    );
    expect(container.textContent).toContain('Nothing saved');
    // The field takes the keyboard, described by its error, said as it came (a live line).
    const field = input(container, 'agent.command');
    await waitFor(() => expect(document.activeElement).toBe(field));
    expect(field.getAttribute('aria-invalid')).toBe('true');
    const described = (field.getAttribute('aria-describedby') ?? '').split(' ').map((id) => document.getElementById(id)?.textContent);
    expect(described).toEqual(['claud was not found on PATH']);
    expect(field.closest('.field')?.querySelector('[data-testid=error-slot]')?.getAttribute('aria-live')).toBe('polite');
  });

  it('installs hooks, reports a refusal, and renders the doctor report in words', async () => {
    const { container } = setup();
    await waitFor(() => expect(container.querySelector('[data-testid=hook-status]')?.getAttribute('data-installed')).toBe('false'));
    // Nothing to uninstall yet.
    expect((container.querySelector('[data-testid=hooks-uninstall]') as HTMLButtonElement).disabled).toBe(true);
    await fireEvent.click(container.querySelector('[data-testid=hooks-install]') as HTMLElement);
    await waitFor(() => expect(container.querySelector('[data-testid=hook-status]')?.getAttribute('data-installed')).toBe('true'));
    await fireEvent.click(container.querySelector('[data-testid=hooks-uninstall]') as HTMLElement);
    await waitFor(() => expect(container.textContent).toContain('settings.json is not valid JSON (line 3); nothing was changed'));
    expect(container.querySelector('[data-testid=hook-status]')?.getAttribute('data-installed')).toBe('true');
    const doctor = container.querySelector('[data-testid=doctor-report]');
    expect(doctor?.querySelector('[data-testid=doctor-problem]')?.textContent).toContain('hooks are not installed');
    expect(doctor?.textContent).toContain('Claude Code: 2.1.197 (newest session written by 2.1.197)');
    // The report part by part is there for whoever wants it, folded away.
    const details = doctor?.querySelector('details:not([open]) [data-testid=doctor-details]');
    expect(details?.textContent).toContain('2.1.197 (Claude Code) at /usr/bin/claude; newest session written by 2.1.197');
    expect(details?.textContent).toContain('/x/mimesis/fleet.db: ok, 3 sessions, 0 links in work chains, 12 KB, schema 1');
  });

  it('shows the value in effect and where it comes from when the environment overrides the stored one', async () => {
    const { container } = setup(
      [],
      [
        { field: 'limits.maxDurationSecs', value: 3600, source: 'the environment (MAX_SESSION_DURATION_SECONDS)' },
        { field: 'agent.command', value: '/opt/standin', source: "this run's --agent or $MIMESIS_AGENT" },
      ],
    );
    await waitFor(() => expect(container.querySelector('[data-testid=in-effect][data-field="limits.maxDurationSecs"]')).not.toBeNull());
    const duration = container.querySelector('[data-testid=in-effect][data-field="limits.maxDurationSecs"]')?.textContent ?? '';
    expect(duration).toContain('In effect: 1 h, set by the environment (MAX_SESSION_DURATION_SECONDS)');
    expect(container.querySelector('[data-testid=in-effect][data-field="agent.command"]')?.textContent).toContain('/opt/standin');
    expect(input(container, 'limits.maxDurationSecs').value).toBe('14400');
  });
});
