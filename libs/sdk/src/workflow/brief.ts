const MAX_UNITS = 48;

/**
 * The default label of a prompt: its first line, cut to at most 48 UTF-16 code units without
 * splitting a surrogate pair, with `…` appended when anything was left out.
 */
export function brief(prompt: string): string {
  const newline = prompt.indexOf('\n');
  let text = newline === -1 ? prompt : prompt.slice(0, newline);
  if (text.length > MAX_UNITS) {
    let end = MAX_UNITS;
    const last = text.charCodeAt(end - 1);
    if (last >= 0xd800 && last <= 0xdbff) end -= 1; // a high surrogate whose pair would be cut off
    text = text.slice(0, end);
  }
  return text.length < prompt.length ? `${text}…` : text;
}
