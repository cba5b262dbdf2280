/**
 * Errors of the agent's disk side. The agent reports each one as the `command_error` of the command
 * that hit it (e.g. `standby.prepare_image`), so its message is what ends up in the node's
 * `last_error`: it names the device, the hint or the URL, and both digests on a mismatch.
 */
import { IronringError, InvalidParameter } from '../../common/errors.js';

/**
 * Thrown by `parseHints` when a node's `root_device` is malformed: an unknown hint, an unknown or
 * unsupported operator, a value of the wrong type. The message names the hint. Nothing was written.
 */
export class InvalidRootDeviceHints extends InvalidParameter {
  constructor(
    /** The offending hint, e.g. `size`; undefined when the whole value is wrong. */
    readonly hint: string | undefined,
    message: string,
  ) {
    super(hint === undefined ? `root device hints: ${message}` : `root device hint "${hint}": ${message}`);
  }
}

/**
 * Thrown when no block device can take the image: none matches the root device hints, or (without
 * hints) none is at least 4 GiB. The message lists every device that was seen, so an operator can fix
 * the hints without booting the ramdisk again. 404: the device does not exist on this machine.
 */
export class DeviceNotFound extends IronringError {
  override readonly httpStatus = 404;
}

/**
 * Thrown when the image cannot be downloaded: an HTTP status other than 200/206, a connection that
 * failed on every attempt, a body shorter than its Content-Length. Anything already written has had
 * its first MiB zeroed. 502: the image server is at fault.
 */
export class ImageDownloadError extends IronringError {
  override readonly httpStatus = 502;
  constructor(
    readonly url: string,
    /** What went wrong, e.g. `HTTP 404` or `connection reset after 3 attempts`. */
    readonly reason: string,
    options?: ErrorOptions,
  ) {
    super(`cannot download image ${url}: ${reason}`, options);
  }
}

/**
 * Thrown when the streamed image's digest differs from the expected one. The first MiB of the
 * device has been zeroed and synced before this is thrown, so the half-trusted image cannot boot.
 */
export class ImageChecksumMismatch extends IronringError {
  override readonly httpStatus = 502;
  constructor(
    readonly url: string,
    readonly algorithm: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(`image ${url} failed verification: expected ${algorithm} ${expected}, computed ${actual}`);
  }
}

/** Thrown when the image is larger than the device it is to be written to. 400: pick a larger disk. */
export class DeviceTooSmall extends InvalidParameter {
  constructor(
    readonly device: string,
    readonly deviceBytes: number,
    readonly imageBytes: number,
  ) {
    super(`device ${device} holds ${deviceBytes} bytes, the image needs at least ${imageBytes}`);
  }
}

/**
 * Thrown when writing to or syncing the device fails (I/O error, device gone), or when the device
 * cannot be opened or sized. 500: the machine's disk is at fault.
 */
export class ImageWriteError extends IronringError {
  override readonly httpStatus = 500;
  override readonly userError = false;
  constructor(
    readonly device: string,
    readonly reason: string,
    options?: ErrorOptions,
  ) {
    super(`cannot write image to ${device}: ${reason}`, options);
  }
}

/**
 * Thrown before anything is downloaded when the image description is unusable: a URL that is not
 * http(s), an unknown or refused checksum algorithm (md5 unless allowed), a digest of the wrong
 * length. Nothing was written.
 */
export class InvalidImageInfo extends InvalidParameter {}

/**
 * Thrown when the start of a written disk holds no MBR or GPT this agent trusts (no 0x55AA
 * signature, a GPT checksum mismatch, an implausible entry array). The message says which.
 */
export class PartitionTableError extends IronringError {
  override readonly httpStatus = 500;
}
