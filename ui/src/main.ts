import { mount } from 'svelte';
import App from './App.svelte';
import './app.css';
import { registerTerminalFonts } from './lib/fonts';
import { installTooltips } from './lib/tooltip';

performance.mark('mimesis:module');

// The bundled mono font, for the terminal and every monospace text (file paths, ids); each
// face loads when first needed.
registerTerminalFonts();

const target = document.getElementById('app');
if (!target) throw new Error('index.html has no #app element');

const app = mount(App, { target });
// `data-tip` tooltips, delayed, on hover and keyboard focus (never the native `title`).
installTooltips();
performance.mark('mimesis:mounted');
export default app;
