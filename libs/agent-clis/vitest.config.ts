import { libosVitestConfig } from '../../vitest.shared.ts';

export default libosVitestConfig();
