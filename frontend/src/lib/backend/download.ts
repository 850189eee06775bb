// Downloads in a browser: the gateway's token rides in a header, so a file
// it serves comes through fetch and is handed to the browser from memory.

/** The filename a Content-Disposition header gives (never a path), or null. */
export function attachmentName(header: string | null): string | null {
  if (!header) return null;
  let name: string | undefined;
  const star = /filename\*\s*=\s*UTF-8''([^;]+)/i.exec(header);
  if (star?.[1]) {
    try {
      name = decodeURIComponent(star[1].trim());
    } catch {
      // The plain form below may still say.
    }
  }
  if (name === undefined) {
    const plain = /filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/i.exec(header);
    name = plain?.[1]?.replace(/\\(.)/g, '$1') ?? plain?.[2];
  }
  return name && !/[\\/]/.test(name) ? name : null;
}

/** Hands blob to the browser as a download called name. */
export function saveBlob(blob: Blob, name: string, doc: Document = document): void {
  const url = URL.createObjectURL(blob);
  const a = doc.createElement('a');
  a.href = url;
  a.download = name;
  a.rel = 'noopener';
  a.style.display = 'none';
  doc.body.append(a);
  a.click();
  a.remove();
  // The browser has the file once the download starts; a minute is plenty.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
