import { mount } from 'svelte';
import App from './App.svelte';
import './app.css';
import { loadTerminalFonts } from './lib/fonts';

// The bundled mono font, for the terminal and every monospace text (file paths, ids).
void loadTerminalFonts();

const target = document.getElementById('app');
if (!target) throw new Error('index.html has no #app element');

export default mount(App, { target });
