import { pino } from 'pino';
/** Builds the process logger: JSON lines on stdout, secrets redacted. */
export function createLogger(config) {
    return pino({
        level: config.logLevel,
        base: { pid: process.pid },
        timestamp: pino.stdTimeFunctions.isoTime,
        redact: {
            paths: ['req.headers.authorization', 'req.headers.cookie', 'password', '*.password', 'token', '*.token', 'secret', '*.secret'],
            censor: '[redacted]',
        },
    });
}
//# sourceMappingURL=logger.js.map