import { describe, expect, it } from "vitest";
import { errorCodeOf, isErrorCode, MediagateError } from "./mediagate-error.js";

class SampleError extends MediagateError {
  override readonly name = "SampleError";
  readonly code = "MG_SAMPLE_FAILED";
}

describe("error codes", () => {
  it("accepts MG_ codes in capitals and refuses errno, SQLite and lower-case codes", () => {
    expect(isErrorCode("MG_JOURNAL_DAMAGED")).toBe(true);
    expect(isErrorCode("MG_IO_TIMEOUT2")).toBe(true);
    for (const code of ["ENOSPC", "SQLITE_FULL", "mg_config_invalid", "MG_", "MG_a", 42]) {
      expect(isErrorCode(code)).toBe(false);
    }
  });

  it("reads the code of a mediagate error, also of a copy that kept its fields", () => {
    const error = new SampleError("it failed");
    expect(errorCodeOf(error)).toBe("MG_SAMPLE_FAILED");
    expect(errorCodeOf({ ...error })).toBe("MG_SAMPLE_FAILED");
    expect(Object.keys(error)).toContain("code");
    expect(errorCodeOf(Object.assign(new Error("disk"), { code: "ENOSPC" }))).toBeUndefined();
    expect(errorCodeOf(new Error("plain"))).toBeUndefined();
    expect(errorCodeOf("MG_SAMPLE_FAILED")).toBeUndefined();
  });
});
