export * from './client/index.js';
export * from './workflow/index.js';
