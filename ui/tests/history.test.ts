// Issue 35: the window's search over all history — its hits as text with marked matches,
// the keyboard (arrows, Enter, Escape), the empty, error and indexing states, "Who touched
// this file", and opening a hit at its item in the timeline.
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import { describe, expect, it, vi } from 'vitest';
import HistorySearchDialog from '../src/components/HistorySearch.svelte';
import ToolCallItemView from '../src/components/items/ToolCallItem.svelte';
import { AppController, engineContext } from '../src/lib/app.svelte';
import { HistorySearch, hitSession, markedParts, projectName, touchedFile } from '../src/lib/history.svelte';
import { isHistorySearchKey } from '../src/lib/keymap';
import { TimelineView } from '../src/lib/timeline.svelte';
import type { SearchAnswer, SearchHit, SearchRequest, SearchResults } from '../src/lib/types';
import { MockBackend, flush } from './helpers';

function hit(over: Partial<SearchHit> = {}): SearchHit {
  return {
    sessionId: 'aaaaaaaa-0000-4000-8000-000000000001',
    host: null,
    uuid: 'u-1',
    at: '2026-11-02T09:00:03.000Z',
    kind: 'reply',
    snippet: 'The cache is gone.',
    marks: [[4, 9]],
    project: '-home-me-lib',
    workChainId: null,
    workChainName: null,
    superseded: false,
    chainHead: null,
    ...over,
  };
}

function answer(hits: SearchHit[], over: Partial<SearchAnswer> = {}): SearchAnswer {
  return { results: { hits, total: hits.length, totalCapped: false }, progress: { indexing: false, done: 0, total: 0 }, ...over };
}

function backend(search: (r: SearchRequest) => SearchAnswer | Promise<SearchAnswer>) {
  return new MockBackend({
    search_history: (a: { request: SearchRequest }) => search(a.request),
    search_progress: () => ({ indexing: false, done: 0, total: 0 }),
  });
}

function mount(b: MockBackend, file: string | null = null, onopen = vi.fn(), onclose = vi.fn(), hosts: string[] = []) {
  const search = new HistorySearch(b, file, () => hosts);
  const r = render(HistorySearchDialog, { props: { search, label: (id: string) => (id.startsWith('aaaa') ? 'Fix the cache' : null), onopen, onclose } });
  const input = r.getByTestId('history-query') as HTMLInputElement;
  return { ...r, search, input, onopen, onclose };
}

async function type(input: HTMLInputElement, text: string) {
  await fireEvent.input(input, { target: { value: text } });
}

describe('snippets and names', () => {
  it('cuts a snippet at its marks in code points, whatever the marks say', () => {
    expect(markedParts('The cache is gone.', [[4, 9]])).toEqual([
      { text: 'The ', mark: false },
      { text: 'cache', mark: true },
      { text: ' is gone.', mark: false },
    ]);
    // An astral character is one code point (two UTF-16 units).
    expect(markedParts('😀 café 😀', [[2, 6]])).toEqual([
      { text: '😀 ', mark: false },
      { text: 'café', mark: true },
      { text: ' 😀', mark: false },
    ]);
    // Out of range, overlapping, reversed: clamped, never thrown.
    expect(markedParts('abc', [[2, 99], [1, 2], [5, 3]])).toEqual([
      { text: 'ab', mark: false },
      { text: 'c', mark: true },
    ]);
    expect(markedParts('', [])).toEqual([]);
  });

  it('names a project by its last part and a hit by the session it opens', () => {
    // The session's folder when the roster knows it: a folder's own hyphens are kept.
    expect(projectName('-home-me-src-acme-api', '/home/me/src/acme-api')).toBe('acme-api');
    expect(projectName('-home-dev-src-project-031', '/home/dev/src/project-031/')).toBe('project-031');
    // Else Claude Code's name for it whole: its last part cannot be told from the folder's hyphens.
    expect(projectName('-home-me-src-acme-api')).toBe('home-me-src-acme-api');
    expect(projectName('-home-me-src-acme-api', null)).toBe('home-me-src-acme-api');
    expect(projectName('')).toBe('');
    expect(hitSession(hit())).toBe('aaaaaaaa-0000-4000-8000-000000000001');
    expect(hitSession(hit({ superseded: true, chainHead: 'head' }))).toBe('head');
    // Another machine's session is keyed as its roster row.
    expect(hitSession(hit({ host: 'devbox', sessionId: 's9' }))).toBe('devbox:s9');
    expect(hitSession(hit({ host: 'devbox', superseded: true, chainHead: 'head' }))).toBe('devbox:head');
  });

  it('knows the file of the calls that read, edit or write one', () => {
    expect(touchedFile('Read', { file_path: '/a/src/store.rs' })).toBe('/a/src/store.rs');
    expect(touchedFile('NotebookEdit', { notebook_path: '/a/n.ipynb' })).toBe('/a/n.ipynb');
    expect(touchedFile('Bash', { command: 'cat /a/x' })).toBeNull();
    expect(touchedFile('Write', { file_path: 7 })).toBeNull();
    expect(touchedFile('Edit', null)).toBeNull();
  });
});

describe('its key', () => {
  it('is Ctrl+Shift+F (or ⌘⇧F), apart from the roster filter\'s /', () => {
    const k = (key: string, over: Partial<KeyboardEvent> = {}) =>
      isHistorySearchKey({ key, ctrlKey: false, metaKey: false, altKey: false, shiftKey: false, defaultPrevented: false, ...over } as KeyboardEvent);
    expect(k('F', { ctrlKey: true, shiftKey: true })).toBe(true);
    expect(k('f', { metaKey: true, shiftKey: true })).toBe(true);
    expect(k('f', { ctrlKey: true })).toBe(false);
    expect(k('/')).toBe(false);
    expect(k('F', { ctrlKey: true, shiftKey: true, altKey: true })).toBe(false);
    expect(k('F', { ctrlKey: true, shiftKey: true, defaultPrevented: true })).toBe(false);
  });
});

describe('the history search dialog', () => {
  it('runs the typed query and lists each hit with its session, project, kind and marked snippet as text', async () => {
    const b = backend((r) =>
      answer(
        r.query === 'cache'
          ? [hit(), hit({ sessionId: 'bbbbbbbb-0000-4000-8000-000000000002', uuid: 'u-2', kind: 'tool_call', snippet: '<img src=x onerror=alert(1)> cache', marks: [[29, 34]] })]
          : [],
      ),
    );
    const { input, getAllByTestId, getByTestId, container } = mount(b);
    expect(getByTestId('history-status').textContent).toContain('"a phrase"');
    await type(input, 'cache');
    await waitFor(() => expect(getAllByTestId('history-hit')).toHaveLength(2));
    const req = b.calls.find((c) => c.cmd === 'search_history')?.args as { request: SearchRequest };
    expect(req.request).toMatchObject({ query: 'cache', file: null, kinds: [] });
    const [first, second] = getAllByTestId('history-hit');
    expect(first.textContent).toContain('Fix the cache');
    expect(first.textContent).toContain('Reply');
    expect(first.textContent).toContain('lib');
    expect(first.querySelector('mark')?.textContent).toBe('cache');
    expect(first.getAttribute('aria-selected')).toBe('true');
    // The untrusted snippet is text: no element came from it.
    expect(second.querySelector('img')).toBeNull();
    expect(second.querySelector('.snippet')?.textContent).toContain('<img src=x onerror=alert(1)>');
    expect(second.textContent).toContain('bbbbbbbb');
    expect(getByTestId('history-status').textContent).toBe('2 matches.');
    expect(container.querySelector('[title]')).toBeNull();
  });

  it('moves with the arrows, opens with Enter, closes with Escape', async () => {
    const b = backend(() => answer([hit(), hit({ uuid: 'u-2' }), hit({ uuid: 'u-3' })]));
    const { input, getAllByTestId, onopen, onclose } = mount(b);
    await type(input, 'cache');
    await waitFor(() => expect(getAllByTestId('history-hit')).toHaveLength(3));
    await fireEvent.keyDown(input, { key: 'ArrowDown' });
    await fireEvent.keyDown(input, { key: 'ArrowDown' });
    await fireEvent.keyDown(input, { key: 'ArrowDown' });
    await fireEvent.keyDown(input, { key: 'ArrowUp' });
    expect(getAllByTestId('history-hit')[1].getAttribute('aria-selected')).toBe('true');
    expect(input.getAttribute('aria-activedescendant')).toBe(getAllByTestId('history-hit')[1].id);
    await fireEvent.keyDown(input, { key: 'Enter' });
    expect(onopen).toHaveBeenCalledWith(expect.objectContaining({ uuid: 'u-2' }));
    await fireEvent.keyDown(input, { key: 'Escape' });
    expect(onclose).toHaveBeenCalled();
  });

  it('says "No match." for nothing found, and the engine\'s sentence for a query it refuses', async () => {
    const b = backend((r) => {
      if (r.query.startsWith('-')) throw new Error('a query of only words to leave out finds nothing: add a word to look for');
      return answer([]);
    });
    const { input, findByTestId, getByTestId, queryAllByTestId } = mount(b);
    await type(input, 'zebra');
    await waitFor(() => expect(getByTestId('history-status').textContent).toBe('No match.'));
    await type(input, '-zebra');
    const err = await findByTestId('history-error');
    expect(err.textContent).toBe('a query of only words to leave out finds nothing: add a word to look for');
    expect(err.getAttribute('role')).toBe('alert');
    expect(queryAllByTestId('history-hit')).toHaveLength(0);
  });

  it('drops the answer to a query typed over', async () => {
    let release: (a: SearchAnswer) => void = () => {};
    const b = backend((r) => (r.query === 'slow' ? new Promise<SearchAnswer>((res) => (release = res)) : answer([hit({ uuid: 'fast' })])));
    const { input, search } = mount(b);
    await type(input, 'slow');
    await waitFor(() => expect(b.count('search_history')).toBe(1));
    await type(input, 'fast');
    await waitFor(() => expect(search.hits.map((h) => h.uuid)).toEqual(['fast']));
    release(answer([hit({ uuid: 'stale' })]));
    await flush();
    expect(search.hits.map((h) => h.uuid)).toEqual(['fast']);
  });

  it('shows the first build\'s progress while the index is being made', async () => {
    let p = { indexing: true, done: 3, total: 10 };
    const b = new MockBackend({
      search_history: () => answer([hit()], { progress: p }),
      search_progress: () => p,
    });
    const { findByTestId, queryByTestId } = mount(b);
    expect((await findByTestId('history-progress')).textContent).toContain('3 of 10');
    p = { indexing: false, done: 10, total: 10 };
    await waitFor(() => expect(queryByTestId('history-progress')).toBeNull(), { timeout: 3000 });
  });

  it('searches the calls of one file, and "Any file" lifts it', async () => {
    const b = backend((r) => answer(r.file ? [hit({ kind: 'tool_call', snippet: 'Edit /a/src/store.rs', marks: [] })] : []));
    const { getByTestId, findAllByTestId } = mount(b, '/a/src/store.rs');
    expect(getByTestId('history-file').textContent).toContain('/a/src/store.rs');
    expect(await findAllByTestId('history-hit')).toHaveLength(1);
    await fireEvent.click(getByTestId('history-file').querySelector('button') as HTMLElement);
    await waitFor(() => expect(() => getByTestId('history-file')).toThrow());
  });
});

describe('other machines', () => {
  function results(hits: SearchHit[]): SearchResults {
    return { hits, total: hits.length, totalCapped: false };
  }

  it('merges each machine\'s hits newest first as they come, names the machine, and a slow one holds nothing back', async () => {
    let releaseSlow: (r: SearchResults) => void = () => {};
    const b = new MockBackend({
      search_history: () => answer([hit({ uuid: 'here', at: '2026-11-02T09:00:00.000Z' })]),
      search_progress: () => ({ indexing: false, done: 0, total: 0 }),
      search_host: (a: { host: string; request: SearchRequest }) => {
        if (a.host === 'build-box') return new Promise<SearchResults>((res) => (releaseSlow = res));
        if (a.host === 'gone-box') throw new Error('not reachable — ssh: connect to host gone-box port 22: Connection refused');
        return results([hit({ uuid: 'there', host: 'devbox', at: '2026-11-03T09:00:00.000Z' })]);
      },
    });
    const { input, search, getAllByTestId, findAllByTestId, onopen } = mount(b, null, vi.fn(), vi.fn(), ['devbox', 'build-box', 'gone-box']);
    await type(input, 'cache');
    // This machine's and devbox's hits are there while build-box is still searching.
    await waitFor(() => expect(search.hits.map((h) => h.uuid)).toEqual(['there', 'here']));
    expect(b.calls.filter((c) => c.cmd === 'search_host').map((c) => (c.args as { host: string }).host)).toEqual(['devbox', 'build-box', 'gone-box']);
    const machines = await findAllByTestId('history-machine');
    await waitFor(() => expect(getAllByTestId('history-machine').map((m) => m.textContent)).toEqual([
      'build-box: searching…',
      'gone-box: not reachable — ssh: connect to host gone-box port 22: Connection refused',
    ]));
    expect(machines.length).toBeGreaterThan(0);
    expect(getAllByTestId('history-hit')[0].getAttribute('data-host')).toBe('devbox');
    expect(getAllByTestId('history-hit')[0].textContent).toContain('devbox');
    // The cursor stays on its hit when a later machine's answer is merged above it.
    await fireEvent.keyDown(input, { key: 'ArrowDown' });
    expect(search.current?.uuid).toBe('here');
    releaseSlow(results([hit({ uuid: 'newest', host: 'build-box', at: '2026-11-04T09:00:00.000Z' })]));
    await waitFor(() => expect(search.hits.map((h) => h.uuid)).toEqual(['newest', 'there', 'here']));
    expect(search.current?.uuid).toBe('here');
    expect(search.total).toBe(3);
    expect(getAllByTestId('history-machine').map((m) => m.textContent)).toEqual([
      'gone-box: not reachable — ssh: connect to host gone-box port 22: Connection refused',
    ]);
    await fireEvent.keyDown(input, { key: 'ArrowUp' });
    await fireEvent.keyDown(input, { key: 'ArrowUp' });
    await fireEvent.keyDown(input, { key: 'Enter' });
    expect(onopen).toHaveBeenCalledWith(expect.objectContaining({ uuid: 'newest', host: 'build-box' }));
  });

  it('drops another machine\'s answer to a query typed over', async () => {
    let release: (r: SearchResults) => void = () => {};
    const b = new MockBackend({
      search_history: () => answer([]),
      search_progress: () => ({ indexing: false, done: 0, total: 0 }),
      search_host: (a: { request: SearchRequest }) =>
        a.request.query === 'slow' ? new Promise<SearchResults>((res) => (release = res)) : results([hit({ uuid: 'fast', host: 'devbox' })]),
    });
    const { input, search } = mount(b, null, vi.fn(), vi.fn(), ['devbox']);
    await type(input, 'slow');
    await waitFor(() => expect(b.count('search_host')).toBe(1));
    await type(input, 'fast');
    await waitFor(() => expect(search.hits.map((h) => h.uuid)).toEqual(['fast']));
    release(results([hit({ uuid: 'stale', host: 'devbox' })]));
    await flush();
    expect(search.hits.map((h) => h.uuid)).toEqual(['fast']);
  });

  it('a hit of another machine opens that machine\'s session at its item', async () => {
    const b = backend(() => answer([]));
    const app = new AppController(() => Promise.resolve(b));
    const reveal = vi.fn(() => Promise.resolve(true));
    app.engine = { backend: b, store: { hosts: [], select: () => {} }, view: { reveal } } as never;
    const shown: string[] = [];
    app.showSession = (id: string) => void shown.push(id);
    app.openHit(hit({ host: 'devbox', sessionId: 's9', uuid: 'u-7' }));
    expect(shown).toEqual(['devbox:s9']);
    expect(reveal).toHaveBeenCalledWith('devbox:s9', 'u-7', null);
  });
});

describe('from a timeline item', () => {
  it('"Who touched this file" opens the search of that file', async () => {
    const b = backend(() => answer([]));
    const app = new AppController(() => Promise.resolve(b));
    app.engine = { backend: b } as never;
    const ctx = engineContext({ backend: b });
    ctx.set([...ctx.keys()][0], app);
    const item = { kind: 'tool_call' as const, uuid: 't1', timestamp: null, toolUseId: 'toolu_1', tool: 'Edit', input: { file_path: '/a/src/store.rs', old_string: 'a', new_string: 'b' }, result: null };
    const { getByTestId } = render(ToolCallItemView, { props: { item, expanded: true, pending: 'none', ontoggle: () => {} }, context: ctx });
    await fireEvent.click(getByTestId('who-touched'));
    expect(app.history?.file).toBe('/a/src/store.rs');
  });

  it('a hit opens its session, finds its item and highlights it', async () => {
    const b = new MockBackend({
      open_timeline: () => ({ sessionId: 's1', total: 300, start: 100, items: [], waiting: false, seq: 0 }),
      timeline_find: (a: { uuid: string }) => (a.uuid === 'u-42' ? 42 : null),
      timeline_range: (a: { start: number; end: number }) => ({ sessionId: 's1', total: 300, start: a.start, items: [], waiting: false, seq: 0 }),
      close_timeline: () => null,
    });
    const view = new TimelineView(b);
    expect(await view.reveal('s1', 'u-42')).toBe(true);
    expect(view.highlight).toEqual({ uuid: 'u-42', index: 42 });
    expect(b.calls.find((c) => c.cmd === 'timeline_find')?.args).toEqual({ sessionId: 's1', uuid: 'u-42', toolUseId: null });
    expect(await view.reveal('s1', 'gone')).toBe(false);
    expect(view.error).toContain('no longer');
    await view.open('s2');
    expect(view.highlight).toBeNull();
  });
});
