// The few browser globals the page.evaluate callbacks use. The tests compile with the repository's Node options
// (they import the edge, whose code does not type-check against the DOM library), so these are declared here.
interface PageDocument {
  cookie: string;
}
interface HTMLImageElement {
  complete: boolean;
  naturalWidth: number;
  currentSrc: string;
}
interface HTMLAnchorElement {
  href: string;
}
interface HTMLVideoElement {
  muted: boolean;
  autoplay: boolean;
}
type Document = PageDocument;
declare const document: PageDocument;
declare const window: Record<string, unknown>;
declare const navigator: { clipboard: { readText(): Promise<string> } };
