export {};
//# sourceMappingURL=schema.js.map