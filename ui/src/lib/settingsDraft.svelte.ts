// The settings form's state: the stored settings, the draft being edited, the errors to show
// and the save. Validated here first, then by the engine (`settings_set`), which saves nothing
// when anything is wrong. Shared by the form's cards and the save bar, which sit apart on the
// page; it never touches hooks, the doctor or the machines list.
import type { Backend } from './backend';
import { errorsByField, linesOf, setPath, validateSettings } from './settings';
import type { InEffect, Settings, SettingsError } from './types';

/**
 * Checks that read another field too: leaving that one shows the error where it is put (the
 * clean-up level must stay above the warning level).
 */
const ALSO_SHOWS: Record<string, string[]> = {
  'limits.diskWarnPercent': ['limits.diskCleanupPercent'],
};

const fixing = (n: number) => `Nothing saved: ${n === 1 ? 'one field needs' : `${n} fields need`} fixing.`;

export class SettingsDraft {
  saved = $state.raw<Settings | null>(null);
  draft = $state.raw<Settings | null>(null);
  serverErrors = $state.raw<SettingsError[]>([]);
  showErrors = $state(false);
  /**
   * Fields left (blurred, or changed) since the draft was loaded, saved or reverted: their
   * errors show at once, not only after Save. A field being typed into is not judged yet.
   */
  left = $state.raw<readonly string[]>([]);
  saving = $state(false);
  status = $state<string | null>(null);
  loadError = $state<string | null>(null);
  /** What the environment or flags set over the stored values. */
  inEffect = $state.raw<InEffect>({ overrides: [], notApplied: [] });

  // Text areas keep what was typed (blank lines and all) until saved.
  patternsText = $state('');
  argsText = $state('');

  readonly clientErrors = $derived(this.draft ? validateSettings(this.draft) : []);
  readonly shown = $derived(
    errorsByField([...(this.showErrors ? this.clientErrors : this.clientErrors.filter((e) => this.left.includes(e.field))), ...this.serverErrors]),
  );
  readonly dirty = $derived(!!this.draft && !!this.saved && JSON.stringify(this.draft) !== JSON.stringify(this.saved));

  constructor(private readonly backend: Backend) {}

  async load(): Promise<void> {
    try {
      this.adopt(await this.backend.call('settings_get'));
    } catch (e) {
      this.loadError = `Could not read the settings: ${String(e)}`;
    }
    try {
      this.inEffect = await this.backend.call('settings_in_effect');
    } catch {
      // An older app: the stored values are all there is to show.
    }
  }

  overrideOf(path: string) {
    return this.inEffect.overrides.find((o) => o.field === path);
  }

  edit(path: string, value: unknown): void {
    if (!this.draft) return;
    this.draft = setPath(this.draft, path, value);
    this.serverErrors = this.serverErrors.filter((e) => e.field !== path);
    this.status = null;
  }

  /** The user left the field at `path`: its errors show from now on. */
  leave(path: string): void {
    const paths = [path, ...(ALSO_SHOWS[path] ?? [])];
    const more = paths.filter((p) => !this.left.includes(p));
    if (more.length) this.left = [...this.left, ...more];
  }

  /** The text areas, one entry per line. */
  editPatterns(): void {
    this.edit('limits.crashPatterns', linesOf(this.patternsText));
  }
  editArgs(): void {
    this.edit('agent.args', linesOf(this.argsText));
  }

  async save(): Promise<void> {
    if (!this.draft || this.saving) return;
    this.showErrors = true;
    if (this.clientErrors.length) {
      this.status = fixing(this.clientErrors.length);
      return;
    }
    this.saving = true;
    try {
      const r = await this.backend.call('settings_set', { settings: this.draft });
      this.serverErrors = r.errors;
      if (r.errors.length) {
        this.status = fixing(r.errors.length);
      } else {
        this.adopt(r.settings);
        this.showErrors = false;
        this.status = 'Saved.';
      }
    } catch (e) {
      this.status = `Could not save: ${String(e)}`;
    } finally {
      this.saving = false;
    }
  }

  revert(): void {
    if (!this.saved) return;
    this.adopt(this.saved);
    this.serverErrors = [];
    this.showErrors = false;
    this.status = null;
  }

  private adopt(s: Settings): void {
    this.left = [];
    this.saved = s;
    this.draft = s;
    this.patternsText = s.limits.crashPatterns.join('\n');
    this.argsText = s.agent.args.join('\n');
  }
}
