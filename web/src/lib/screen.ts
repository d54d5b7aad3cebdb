// Screens loaded on demand. React.lazy alone makes a page's first load wait twice: for the screen's chunk, then for
// React's Suspense reveal throttle (about 300 ms after the fallback showed) before the screen mounts and starts its
// queries. A screen made here renders at once, without suspending, once its module is in; main.tsx preloads the
// current page's screen before the first render, so the first load waits only for the chunk.
import { type ComponentType, createElement, lazy } from "react";

export interface Screen<P> {
  (props: P): ReturnType<typeof createElement>;
  /** Loads the screen's module (once); resolves when it can render without suspending. */
  preload: () => Promise<void>;
}

export function screen<P extends object>(load: () => Promise<{ default: ComponentType<P> }>): Screen<P> {
  let loaded: ComponentType<P> | undefined;
  let pending: Promise<void> | undefined;
  const preload = () => {
    pending ??= load().then((module) => {
      loaded = module.default;
    });
    return pending;
  };
  const Lazy = lazy(() => preload().then(() => ({ default: loaded as ComponentType<P> })));
  const render = (props: P) =>
    loaded ? createElement(loaded, props) : createElement(Lazy as unknown as ComponentType<P>, props);
  return Object.assign(render, { preload });
}
