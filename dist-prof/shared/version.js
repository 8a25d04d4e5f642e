/** The service version reported by /status, the index and the OpenAPI document (spec: 2.0.0). */
export const VERSION = '2.0.0';
//# sourceMappingURL=version.js.map