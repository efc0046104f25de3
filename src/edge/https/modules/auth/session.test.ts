import { describe, expect, it } from 'vitest';
import { needsTouch, type Session, sessionMaxAge, sessionState } from './session.js';

const session: Session = { v: 1, sub: 'alice', iat: 1000, seen: 1500, chk: 1500 };
const limits = { inactivityTimeout: 300, maximumDuration: 3600, checkInterval: 600 };

describe('session timing', () => {
  it('expires at maximum_duration from sign-in and at inactivity_timeout from the last activity', () => {
    expect(sessionState(session, 1799, limits)).toBe('valid');
    expect(sessionState(session, 1800, limits)).toBe('expired');
    const active = { ...session, seen: 4500 };
    expect(sessionState(active, 4599, { ...limits, checkInterval: 0 })).toBe('valid');
    expect(sessionState(active, 4600, limits)).toBe('expired');
  });

  it('asks for a check with the IdP after the interval', () => {
    expect(sessionState({ ...session, seen: 2000 }, 2099, limits)).toBe('valid');
    expect(sessionState({ ...session, seen: 2000 }, 2100, limits)).toBe('recheck');
  });

  it('treats 0 as no limit', () => {
    const none = { inactivityTimeout: 0, maximumDuration: 0, checkInterval: 0 };
    expect(sessionState(session, 10 ** 9, none)).toBe('valid');
    expect(sessionMaxAge(session, 10 ** 9, none)).toBeUndefined();
    expect(needsTouch(session, 10 ** 9, none)).toBe(false);
  });

  it('records activity at most once a minute, or twice per timeout when that is shorter', () => {
    expect(needsTouch(session, 1559, limits)).toBe(false);
    expect(needsTouch(session, 1560, limits)).toBe(true);
    const short = { ...limits, inactivityTimeout: 30 };
    expect(needsTouch(session, 1514, short)).toBe(false);
    expect(needsTouch(session, 1515, short)).toBe(true);
  });

  it('gives the cookie the time left until the nearer limit', () => {
    expect(sessionMaxAge(session, 1600, limits)).toBe(200);
    expect(sessionMaxAge({ ...session, seen: 4500 }, 4500, limits)).toBe(100);
  });
});
