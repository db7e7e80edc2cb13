/**
 * The two clocks a component that keeps time needs, injected together so a test can step one
 * and not the other: `wallMs` for times that are recorded or shown (epoch ms; an operator or
 * NTP may step it), `monoMs` for ages and waits inside this process (only differences mean
 * anything; it never steps). A wait that outlives the process has only the wall clock.
 */
export interface Clock {
  /** Milliseconds since the epoch, as the system clock says now. */
  wallMs(): number;
  /** Milliseconds since an arbitrary origin of this process; moves at the rate of real time. */
  monoMs(): number;
}

/** The real {@link Clock}: `Date.now` and `performance.now`. */
export const systemClock: Clock = {
  wallMs: () => Date.now(),
  monoMs: () => performance.now(),
};
