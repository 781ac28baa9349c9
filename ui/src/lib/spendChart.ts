// The Spend view's chart: Chart.js, only its bar chart's parts (tree-shaken), loaded with
// the view, not with the page. Stacked bars per day; the tooltip lists each stack's dollars.
import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, Tooltip, type ChartConfiguration } from 'chart.js';
import { formatDollars, type ChartData } from './spend';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Tooltip, Legend);

export interface SpendChart {
  update(data: ChartData): void;
  destroy(): void;
}

/** What draws the chart on a canvas (a test may give another). */
export type DrawChart = (canvas: HTMLCanvasElement, data: ChartData) => SpendChart;

function datasets(d: ChartData): ChartConfiguration<'bar'>['data'] {
  return {
    labels: d.labels,
    datasets: d.series.map((s) => ({ label: s.label, data: s.usd, backgroundColor: s.color, borderWidth: 0, stack: 'usd' })),
  };
}

/** Draws `data` on `canvas`, in the page's colours (its `--muted` and `--border`). */
export const drawSpend: DrawChart = (canvas, data) => {
  const css = getComputedStyle(canvas);
  const text = css.getPropertyValue('--muted').trim() || '#888';
  const grid = css.getPropertyValue('--border').trim() || 'rgba(128, 128, 128, 0.25)';
  const chart = new Chart(canvas, {
    type: 'bar',
    data: datasets(data),
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: 'index', intersect: false },
      scales: {
        x: { stacked: true, grid: { display: false }, ticks: { color: text, maxRotation: 0, autoSkip: true } },
        y: { stacked: true, beginAtZero: true, grid: { color: grid }, ticks: { color: text, callback: (v) => formatDollars(Number(v)) } },
      },
      plugins: {
        legend: { position: 'bottom', labels: { color: text, boxWidth: 12, boxHeight: 12 } },
        tooltip: {
          filter: (item) => (item.parsed.y ?? 0) > 0,
          callbacks: { label: (item) => ` ${item.dataset.label ?? ''}: ${formatDollars(item.parsed.y ?? 0)}` },
        },
      },
    },
  });
  return {
    update(d) {
      chart.data = datasets(d);
      chart.update('none');
    },
    destroy: () => chart.destroy(),
  };
};
