/**
 * The messages of one area of the user interface (the dashboard and the public pages), in every
 * supported locale side by side. The keys come from the English texts; each other locale must have
 * exactly those keys (a missing or extra key is a type error), so a translation cannot fall behind.
 */
export function uiMessages<K extends string>(messages: {
  en: Record<K, string>;
  de: Record<NoInfer<K>, string>;
  fr: Record<NoInfer<K>, string>;
  es: Record<NoInfer<K>, string>;
}) {
  return messages;
}
