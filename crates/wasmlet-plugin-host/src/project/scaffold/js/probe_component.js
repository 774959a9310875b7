// The component's entry: the WIT imports, and the probe as the world's exports.
import * as host from 'wasmlet:plugin/host@0.1.2';
import * as podAccess from 'wasmlet:plugin/pod-access@0.1.2';
import { probeWorld } from 'wasmlet-plugin-sdk/probe';
import { @TYPE@ } from './plugin.js';

export const { configure, selfCheck, check } = probeWorld(@TYPE@, { host, podAccess });
