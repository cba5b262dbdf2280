/**
 * Errors of the boot environment: bad input to `prepare`, and images that cannot be fetched or do not
 * match their checksum. Each carries the HTTP status the API answers with (through `IronringError`).
 */
import { IronringError, InvalidParameter } from '../common/errors.js';

/**
 * Thrown when a node, port, image or option handed to the boot environment is malformed: a MAC that
 * is not six hex octets, a uuid that is not canonical, a checksum without a supported algorithm, a
 * kernel parameter with a line break. Nothing is written when it is thrown.
 */
export class InvalidBootInput extends InvalidParameter {
  constructor(
    /** The offending field, e.g. `ports[1].address` or `images.kernel.checksum`. */
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** Thrown when an image URL uses a scheme the image cache cannot fetch (only file, http and https). */
export class UnsupportedImageSource extends InvalidParameter {
  constructor(
    /** The image URL as given. */
    readonly url: string,
  ) {
    super(`image source ${url} is not supported (use file://, http:// or https://)`);
  }
}

/**
 * Thrown when an image could not be downloaded (connection refused, HTTP status other than 200,
 * unreadable file). The partial download has already been removed. 502: the source is at fault.
 */
export class ImageDownloadFailed extends IronringError {
  override readonly httpStatus = 502;
  constructor(
    /** The image URL. */
    readonly url: string,
    /** What went wrong, e.g. `HTTP 404` or the system error message. */
    readonly reason: string,
    options?: ErrorOptions,
  ) {
    super(`cannot download image ${url}: ${reason}`, options);
  }
}

/**
 * Thrown when a `file://` image source is refused: outside the directories of `[conductor]
 * file_url_allowed_paths` (before or after resolving symlinks), under a system directory that is
 * never an image source (/dev, /sys, /proc, /boot, /etc, /run), or not a regular file. Nothing was
 * read from it. 400: the request named a source this conductor does not serve images from.
 */
export class ImageSourceNotAllowed extends InvalidParameter {
  constructor(
    /** The image URL as given. */
    readonly url: string,
    /** Why, naming the option to change; never where a symlink pointed. */
    readonly reason: string,
  ) {
    super(`image source ${url} is not allowed: ${reason}`);
  }
}

/**
 * Thrown when a downloaded image does not match the checksum it was requested with. The bytes never
 * entered the cache (they were verified in a temp file, which has been removed). 502, like a failed
 * download: either the source changed or the checksum given for it is wrong. The checksum computed
 * from the bytes is deliberately not carried: it would let whoever names the URL learn a digest of
 * any file the conductor can read (as Ironic's CVE-2024-44082 allowed).
 */
export class ImageChecksumMismatch extends IronringError {
  override readonly httpStatus = 502;
  constructor(
    /** The image URL. */
    readonly url: string,
    /** The checksum asked for, `algo:hex`. */
    readonly expected: string,
  ) {
    super(`image ${url}: checksum mismatch (expected ${expected})`);
  }
}
