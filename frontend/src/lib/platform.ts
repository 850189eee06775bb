/** True on a Mac, where the shortcut is ⌘⇧↩ rather than Ctrl+Shift+Enter. */
export const isMac = typeof navigator !== 'undefined' && /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);

/** The "send to the background" shortcut as people read it on this system. */
export const backgroundShortcut = isMac ? '⌘⇧↩' : 'Ctrl+Shift+Enter';

/** Reports whether a key event is the "send to the background" shortcut. */
export function isBackgroundShortcut(e: KeyboardEvent): boolean {
  return e.key === 'Enter' && e.shiftKey && (e.ctrlKey || e.metaKey) && !e.altKey;
}
