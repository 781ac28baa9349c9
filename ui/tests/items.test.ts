import { fireEvent, render } from '@testing-library/svelte';
import { describe, expect, it, vi } from 'vitest';
import TimelineItem from '../src/components/TimelineItem.svelte';
import type { TimelineItem as Item } from '../src/lib/types';

const base = { uuid: 'u1', timestamp: '2026-11-01T12:00:00.000Z' };
const tool = (over: Partial<Extract<Item, { kind: 'tool_call' }>> = {}): Item => ({
  ...base,
  kind: 'tool_call',
  toolUseId: 't1',
  tool: 'Bash',
  input: { command: 'cargo test', description: 'run tests' },
  result: { content: 'ok', isError: false, timestamp: null },
  ...over,
});

describe('timeline items', () => {
  it("shows AskUserQuestion's input as its questions and options, the chosen one marked, not as JSON", async () => {
    const input = {
      questions: [
        {
          header: 'Colour',
          question: 'Which colour?',
          multiSelect: false,
          options: [
            { label: 'Red', description: 'warm' },
            { label: 'Blue', description: 'cool' },
          ],
        },
        { header: 'Name', question: 'What name?', multiSelect: false, options: [{ label: 'Ada', description: '' }] },
      ],
    };
    const result = { content: 'User has answered your questions: "Which colour?"="Blue", "What name?"="Grace". You can now continue with the user\'s answers in mind.', isError: false, timestamp: null };
    const { container } = render(TimelineItem, { props: { item: tool({ tool: 'AskUserQuestion', input, result }), expanded: true, ontoggle: () => {} } });
    const qs = [...container.querySelectorAll('[data-testid=question]')];
    expect(qs.map((q) => q.querySelector('.q-text')?.textContent)).toEqual(['Which colour?', 'What name?']);
    const text = (o: Element) => o.textContent?.replace(/\s+/g, ' ').trim();
    expect([...qs[0].querySelectorAll('[data-chosen=true]')].map(text)).toEqual(['● Blue — cool (chosen)']);
    // An answer typed by the user (none of the options) is shown as the answer.
    expect([...qs[1].querySelectorAll('[data-chosen=true]')].map(text)).toEqual(['●Answered: Grace']);
    expect(container.textContent).not.toContain('"questions"');
  });

  it('shows a collapsed tool call as its name and target, and the input and result when expanded', async () => {
    const ontoggle = vi.fn();
    const { container, rerender } = render(TimelineItem, { props: { item: tool(), ontoggle } });
    expect(container.textContent).toContain('Bash');
    expect(container.textContent).toContain('cargo test');
    expect(container.querySelector('pre')).toBeNull();
    await fireEvent.click(container.querySelector('button') as HTMLElement);
    expect(ontoggle).toHaveBeenCalledOnce();
    await rerender({ item: tool(), expanded: true, ontoggle });
    expect(container.querySelectorAll('pre').length).toBeGreaterThanOrEqual(2);
    expect(container.textContent).toContain('"description": "run tests"');
  });

  it('marks error results and pending calls', async () => {
    const { container, rerender } = render(TimelineItem, {
      props: { item: tool({ result: { content: 'boom', isError: true, timestamp: null } }) },
    });
    expect(container.querySelector('.tool.error')).not.toBeNull();
    await rerender({ item: tool({ result: null }), pending: 'approval' });
    expect(container.textContent).toContain('waiting for approval');
    await rerender({ item: tool({ result: null }), pending: 'running' });
    expect(container.textContent).toContain('running');
  });

  it('offers "Show all" on a truncated item', async () => {
    const onshowall = vi.fn();
    const item: Item = { ...base, kind: 'assistant_text', text: 'cut…', model: null, truncated: true };
    const { getByText } = render(TimelineItem, { props: { item, onshowall } });
    await fireEvent.click(getByText('Show all'));
    expect(onshowall).toHaveBeenCalledOnce();
  });

  it('draws compaction as a labelled boundary with an expandable summary', async () => {
    const item: Item = { ...base, kind: 'compaction', trigger: 'manual', preTokens: 160_000, summary: 'the summary' };
    const { container, rerender } = render(TimelineItem, { props: { item } });
    expect(container.textContent).toContain('Conversation compacted · manual · 160k tokens');
    expect(container.textContent).not.toContain('the summary');
    await rerender({ item, expanded: true });
    expect(container.textContent).toContain('the summary');
  });

  it('keeps thinking collapsed by default and words system lines', () => {
    const thinking: Item = { ...base, kind: 'thinking', text: 'secret plan\nline two', redacted: false };
    const { container } = render(TimelineItem, { props: { item: thinking } });
    expect(container.querySelector('[aria-expanded=false]')).not.toBeNull();
    const sys: Item = { ...base, kind: 'system', subtype: 'turn_duration', text: '12000' };
    const r = render(TimelineItem, { props: { item: sys } });
    expect(r.container.textContent).toContain('Turn took 12 s');
  });
});
