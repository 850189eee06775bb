import { mount } from 'svelte';
import App from './App.svelte';
import './app.css';
import { pickBackend } from './lib/backend';
import { takeToken } from './lib/backend/signin';

const target = document.getElementById('app');
if (!target) throw new Error('index.html lacks #app');

// A new sign-in link opened in this tab only changes the fragment: keep its
// token and start again with it.
window.addEventListener('hashchange', () => {
  if (window.location.hash.startsWith('#token=') && takeToken(window)) window.location.reload();
});

export default mount(App, { target, props: { backend: pickBackend() } });
