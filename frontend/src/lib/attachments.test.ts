import { describe, expect, it } from 'vitest';
import { attachmentNotice, hasAttachment, hasText } from './attachments';

describe('attachments', () => {
  it('lets text through without a word', () => {
    expect(hasAttachment({ types: ['text/plain', 'text/html'], files: [] })).toBe(false);
    // An editor's own clipboard data beside the text is still text.
    expect(hasAttachment({ types: ['text/plain', 'text/html', 'vscode-editor-data'], files: [] })).toBe(false);
    expect(attachmentNotice({ types: ['text/plain'], files: [] })).toBe('');
  });

  it('says a file was not added, naming it', () => {
    expect(attachmentNotice({ types: ['Files'], files: ['report.pdf'] })).toBe(
      "Tasks and chats don't take attachments yet, so report.pdf was not added. Paste the text, or give the file's path in the message.",
    );
    expect(attachmentNotice({ types: ['Files'], files: ['a.png', 'b.png'] })).toContain('a.png and b.png were not added');
    expect(attachmentNotice({ types: ['Files'], files: ['a', 'b', 'c'] })).toContain('a and 2 other files were not added');
  });

  it('says so for a pasted image with no file name, even beside text', () => {
    expect(hasAttachment({ types: ['text/html', 'image/png'], files: [] })).toBe(true);
    expect(attachmentNotice({ types: ['image/png'], files: [] })).toContain('so it was not added');
    expect(hasText({ types: ['text/plain', 'image/png'], files: [] })).toBe(true);
  });
});
