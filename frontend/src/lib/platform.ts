/** True on a Mac, where the shortcut is ⌘⇧↩ rather than Ctrl+Shift+Enter. */
export const isMac = typeof navigator !== 'undefined' && /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);

/** The "send to the background" shortcut as people read it on this system. */
export const backgroundShortcut = isMac ? '⌘⇧↩' : 'Ctrl+Shift+Enter';

/** Reports whether a key event is the "send to the background" shortcut. */
export function isBackgroundShortcut(e: KeyboardEvent): boolean {
  return e.key === 'Enter' && e.shiftKey && (e.ctrlKey || e.metaKey) && !e.altKey;
}

/** The palette's shortcut as people read it on this system. */
export const paletteShortcut = isMac ? '⌘K' : 'Ctrl+K';

/** Reports whether a key event opens the ⌘K palette (Ctrl+K off a Mac). */
export function isPaletteShortcut(e: KeyboardEvent): boolean {
  return e.key.toLowerCase() === 'k' && (isMac ? e.metaKey : e.ctrlKey) && !e.shiftKey && !e.altKey;
}
