export * from './workflow/index.js';
export * from './client/index.js';
