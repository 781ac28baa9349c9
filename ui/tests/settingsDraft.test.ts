// The settings form's state on its own: what a save sends, when it sends nothing, and revert.
import { describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS } from '../src/lib/settings';
import { SettingsDraft } from '../src/lib/settingsDraft.svelte';
import type { Settings } from '../src/lib/types';
import { MockBackend } from './helpers';

function loaded(set: (s: Settings) => { settings: Settings; errors: { field: string; message: string }[] } = (s) => ({ settings: s, errors: [] })) {
  const b = new MockBackend({
    settings_get: () => structuredClone(DEFAULT_SETTINGS),
    settings_in_effect: () => ({ overrides: [{ field: 'agent.command', value: 'claude-x', source: 'MIMESIS_AGENT' }], notApplied: [] }),
    settings_set: (a: { settings: Settings }) => set(a.settings),
  } as never);
  const form = new SettingsDraft(b);
  return { b, form, ready: form.load() };
}

const sets = (b: MockBackend) => b.calls.filter((c) => c.cmd === 'settings_set').length;

describe('SettingsDraft', () => {
  it('loads the stored settings, the text areas and what overrides them', async () => {
    const { form, ready } = loaded();
    await ready;
    expect(form.draft).toEqual(DEFAULT_SETTINGS);
    expect(form.dirty).toBe(false);
    expect(form.patternsText).toBe(DEFAULT_SETTINGS.limits.crashPatterns.join('\n'));
    expect(form.overrideOf('agent.command')?.source).toBe('MIMESIS_AGENT');
    expect(form.overrideOf('agent.args')).toBeUndefined();
  });

  it('sends nothing while a field is wrong, and says how many', async () => {
    const { b, form, ready } = loaded();
    await ready;
    form.edit('limits.idleTimeoutSecs', 30);
    form.edit('agent.command', ' ');
    expect(form.dirty).toBe(true);
    expect(form.shown).toEqual({});
    await form.save();
    expect(sets(b)).toBe(0);
    expect(form.status).toBe('Nothing saved: 2 fields need fixing.');
    expect(Object.keys(form.shown).sort()).toEqual(['agent.command', 'limits.idleTimeoutSecs']);
  });

  it('shows the engine’s errors until that field is edited; a clean save adopts what was stored', async () => {
    let refuse = true;
    const { b, form, ready } = loaded((s) => (refuse ? { settings: s, errors: [{ field: 'agent.command', message: 'not found' }] } : { settings: s, errors: [] }));
    await ready;
    form.edit('agent.command', 'nope');
    await form.save();
    expect(form.status).toBe('Nothing saved: one field needs fixing.');
    expect(form.shown).toEqual({ 'agent.command': 'not found' });
    form.edit('agent.command', 'claude');
    expect(form.shown).toEqual({});
    refuse = false;
    await form.save();
    expect(sets(b)).toBe(2);
    expect(form.status).toBe('Saved.');
    expect(form.dirty).toBe(false);
    expect(form.saved?.agent.command).toBe('claude');
  });

  it('shows a field’s error once it is left, not while it is typed into, and forgets it on revert', async () => {
    const { b, form, ready } = loaded();
    await ready;
    form.edit('limits.durationWarnPercent', 150);
    expect(form.shown).toEqual({});
    form.leave('limits.durationWarnPercent');
    expect(form.shown).toEqual({ 'limits.durationWarnPercent': 'must be between 1 and 99 %' });
    // Another field left with a good value shows nothing of its own.
    form.leave('limits.maxLiveSessions');
    expect(Object.keys(form.shown)).toEqual(['limits.durationWarnPercent']);
    // Corrected, the message goes at once; wrong again, it comes at once (the field was left).
    form.edit('limits.durationWarnPercent', 90);
    expect(form.shown).toEqual({});
    form.edit('limits.durationWarnPercent', 0);
    expect(form.shown['limits.durationWarnPercent']).toBe('must be between 1 and 99 %');
    expect(sets(b)).toBe(0);
    form.revert();
    form.edit('limits.durationWarnPercent', 150);
    expect(form.shown).toEqual({});
  });

  it('leaving the warning level shows the clean-up level’s error it causes', async () => {
    const { form, ready } = loaded();
    await ready;
    form.edit('limits.diskWarnPercent', 96);
    form.leave('limits.diskWarnPercent');
    expect(form.shown).toEqual({ 'limits.diskCleanupPercent': 'must be above the warning level' });
  });

  it('a clean save forgets the fields left', async () => {
    const { form, ready } = loaded();
    await ready;
    form.edit('watch.approvalTimeoutSecs', 7);
    form.leave('watch.approvalTimeoutSecs');
    await form.save();
    expect(form.status).toBe('Saved.');
    form.edit('watch.approvalTimeoutSecs', 0);
    expect(form.shown).toEqual({});
  });

  it('revert goes back to what is stored, text areas included', async () => {
    const { form, ready } = loaded();
    await ready;
    form.argsText = '--one\n\n--two';
    form.editArgs();
    expect(form.draft?.agent.args).toEqual(['--one', '--two']);
    form.revert();
    expect(form.draft).toEqual(DEFAULT_SETTINGS);
    expect(form.argsText).toBe(DEFAULT_SETTINGS.agent.args.join('\n'));
    expect(form.dirty).toBe(false);
  });
});
