// Conch's service worker (served at /sw.js, scope /): while the page is
// closed, it shows the notification a task's Web Push carries, and a click
// opens the page on that task's chat. An open page that is visible tells
// the person itself, so the worker stays quiet then.

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('push', (event) => {
  let p = null;
  try {
    p = event.data ? event.data.json() : null;
  } catch {
    p = null;
  }
  if (!p || typeof p.title !== 'string' || typeof p.tag !== 'string') return;
  event.waitUntil(
    (async () => {
      const pages = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
      if (pages.some((c) => c.visibilityState === 'visible')) return;
      await self.registration.showNotification(p.title, { body: p.body || '', tag: p.tag, data: { taskId: p.taskId || '', chat: p.chat || '' } });
    })(),
  );
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const data = event.notification.data || {};
  event.waitUntil(
    (async () => {
      const pages = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
      const page = pages[0];
      if (page) {
        await page.focus();
        page.postMessage({ type: 'conch.open', taskId: data.taskId });
        return;
      }
      await self.clients.openWindow(data.chat ? '/#chat/' + encodeURIComponent(data.chat) : '/#tasks');
    })(),
  );
});
