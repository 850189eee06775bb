// What sticks out of a page at its width, for the browser runs (run.ts).
//
// The functions below run in the page (layoutProblems sends them there
// whole), so each uses only the DOM and the others.

import type { Page } from 'playwright-core';

/** Content that scrolls sideways by design: output, code, diffs, tables. */
const scrollsOnPurpose = 'pre, pre *, textarea, .md .table, .md .table *';
/** The cards, whose contents must stay inside them. */
const cards = '[data-task-card], article, .card';

/**
 * An element as a problem names it: its tag, classes, card and text.
 */
function named(el: Element) {
  const cls = typeof el.className === 'string' && el.className.trim() ? `.${el.className.trim().split(/\s+/).filter((c) => !c.startsWith('svelte-')).join('.')}` : '';
  const card = el.closest('[data-task-id]')?.getAttribute('data-task-id');
  const text = (el.textContent ?? '').replace(/\s+/g, ' ').trim().slice(0, 40);
  return `${el.tagName.toLowerCase()}${cls}${card ? ` (card ${card.slice(-8)})` : ''}${text ? ` "${text}"` : ''}`;
}

/** Whether el shows on the page. */
function shown(el: Element) {
  const r = el.getBoundingClientRect();
  return r.width >= 2 && r.height >= 2 && el.checkVisibility({ visibilityProperty: true }) && !el.closest('[hidden]');
}

/** Whether el cuts off what reaches past it. */
function clips(el: Element) {
  const s = getComputedStyle(el);
  return s.overflowX !== 'visible' || /paint|strict|content/.test(s.contain) || s.contentVisibility === 'auto';
}

/** Whether el has a ring drawn around it (a working chip's pulse), which may reach past it. */
function ringed(el: Element) {
  return ['::before', '::after'].some((p) => {
    const s = getComputedStyle(el, p);
    return s.content !== 'none' && s.position === 'absolute';
  });
}

/** Every scrolling element (the document's among them) whose content is wider than it. */
function sideways() {
  const scrollers = [document.scrollingElement ?? document.documentElement];
  for (const el of Array.from(document.querySelectorAll('body *'))) {
    const o = getComputedStyle(el).overflowX;
    if ((o === 'auto' || o === 'scroll') && !el.matches(scrollsOnPurpose) && shown(el)) scrollers.push(el);
  }
  return scrollers.filter((s) => s.scrollWidth > s.clientWidth + 1).map((s) => `${named(s).slice(0, 60)} scrolls sideways (${s.scrollWidth} px of content in ${s.clientWidth})`);
}

/**
 * Where el's box leaves the window, the element that clips it or its
 * card; '' when it stays inside them all.
 */
function outside(el: Element) {
  const r = el.getBoundingClientRect();
  const width = document.documentElement.clientWidth;
  if (r.left < -1 || r.right > width + 1) return `leaves the window (${Math.round(r.left)}–${Math.round(r.right)} of ${width} px)`;
  let clip = el.parentElement;
  while (clip && clip !== document.body && !clips(clip)) clip = clip.parentElement;
  if (clip && clip !== document.body) {
    const left = clip.getBoundingClientRect().left + clip.clientLeft;
    const right = left + clip.clientWidth;
    if (r.left < left - 1 || r.right > right + 1) return `is cut by ${named(clip).slice(0, 40)} (${Math.round(r.left)}–${Math.round(r.right)} in ${Math.round(left)}–${Math.round(right)})`;
  }
  const card = el.parentElement?.closest(cards);
  const c = card?.getBoundingClientRect();
  if (c && (r.left < c.left - 1 || r.right > c.right + 1)) return `sticks out of its card (${Math.round(r.left)}–${Math.round(r.right)} in ${Math.round(c.left)}–${Math.round(c.right)})`;
  return '';
}

/** Every card, button, chip, time and title that is cut, and every cut title without an ellipsis. */
function cutBoxes() {
  const problems: string[] = [];
  for (const el of Array.from(document.querySelectorAll(`${cards}, button, a.btn, h3, .title, time, .chip`))) {
    if (!shown(el) || el.matches(scrollsOnPurpose)) continue;
    const where = outside(el);
    if (where) problems.push(`${named(el)} ${where}`);
    else if (el.matches('h3, .title') && el.scrollWidth > el.clientWidth + 1) {
      const s = getComputedStyle(el);
      if (s.textOverflow !== 'ellipsis' || s.overflowX === 'visible') problems.push(`${named(el)} is wider than its box without an ellipsis`);
    }
  }
  return problems;
}

/** Everything in a card that holds more than it is wide without clipping it: a row whose buttons or time run into the card's edge. */
function overfull() {
  const problems: string[] = [];
  for (const card of Array.from(document.querySelectorAll(cards)).filter(shown)) {
    for (const el of [card, ...Array.from(card.querySelectorAll('*'))]) {
      if (el.clientWidth === 0 || el.matches(scrollsOnPurpose) || clips(el) || ringed(el) || !shown(el)) continue;
      if (el.scrollWidth > el.clientWidth + 1) problems.push(`${named(el)} holds more than it is wide (${el.scrollWidth} px in ${el.clientWidth})`);
    }
  }
  return problems;
}

/** All of the above as one expression the page evaluates: the problems. */
const inPage = `(() => {
  const scrollsOnPurpose = ${JSON.stringify(scrollsOnPurpose)};
  const cards = ${JSON.stringify(cards)};
  ${[named, shown, clips, ringed, sideways, outside, cutBoxes, overfull].map(String).join('\n')}
  return [...sideways(), ...cutBoxes(), ...overfull()];
})()`;

/**
 * Lists what is cut or scrolls sideways on the page as it is now: every
 * scrolling element whose content is wider than it (code, tables and
 * outputs, which scroll on purpose, aside); every card, button, chip,
 * time and title whose box leaves the element that clips it, its card or
 * the window; and everything in a card that holds more than it is wide
 * without clipping it. A title wider than its text box must end in an
 * ellipsis. Each problem is one line naming the element; none is [].
 */
export function layoutProblems(page: Page): Promise<string[]> {
  return page.evaluate(inPage);
}
